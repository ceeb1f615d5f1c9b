"""Old per-minute statistics are cleared by the built-in retention; the
running totals (Prometheus counters) stay."""

from __future__ import annotations

from datetime import timedelta

from django.test import TestCase, override_settings
from django.utils import timezone

from robust_queue import conf
from robust_queue.checks import check_settings
from robust_queue.models import Statistic
from robust_queue.models.retention import clear_expired, clear_statistics
from tests.integration.statistics.test_recording import numbers


def add(days_ago: float, finished: int = 1) -> None:
    minute = (timezone.now() - timedelta(days=days_ago)).replace(second=0, microsecond=0)
    Statistic.objects.add_all({(minute, "default", "t"): numbers(finished=finished)})


class StatisticsRetentionTests(TestCase):
    def test_minutes_older_than_the_retention_are_cleared_in_batches(self) -> None:
        for days in (20, 15, 15.5, 1, 0):
            add(days)
        self.assertEqual(clear_statistics("default", timedelta(days=14), batch_size=2), 3)
        self.assertEqual(Statistic.objects.minutes().count(), 2)
        self.assertEqual(Statistic.objects.totals().get().finished, 5)

    @override_settings(ROBUST_QUEUE={"statistics_retention": timedelta(days=2)})
    def test_the_maintenance_applies_the_setting(self) -> None:
        add(3)
        add(1)
        self.assertEqual(clear_expired("default")["statistics"], 1)
        self.assertEqual(Statistic.objects.minutes().count(), 1)

    def test_the_default_retention_is_fourteen_days(self) -> None:
        self.assertEqual(conf.get(conf.STATISTICS_RETENTION), timedelta(days=14))
        add(13)
        self.assertEqual(clear_expired("default")["statistics"], 0)


class StatisticsSettingsTests(TestCase):
    def test_bad_values_are_named_by_the_system_check(self) -> None:
        cases = {
            "statistics_retention": (
                -1,
                'ROBUST_QUEUE["statistics_retention"] must be more than 0 seconds, not -1.',
            ),
            "statistics_flush_interval": (
                "soon",
                'ROBUST_QUEUE["statistics_flush_interval"] must be a number of seconds '
                "or a timedelta, not 'soon'.",
            ),
            "metrics_token": (
                "short",
                'ROBUST_QUEUE["metrics_token"] must be None or a string of at least 16 '
                "characters, not 'short'.",
            ),
        }
        for key, (value, message) in cases.items():
            with self.subTest(key=key), override_settings(ROBUST_QUEUE={key: value}):
                errors = [m.msg for m in check_settings() if m.id == "robust_queue.E023"]
                self.assertEqual(errors, [message])

    @override_settings(ROBUST_QUEUE={"statistics_retention": 3600, "metrics_token": "x" * 16})
    def test_good_values_pass(self) -> None:
        self.assertEqual([m for m in check_settings() if m.is_serious()], [])
        self.assertEqual(conf.get(conf.STATISTICS_RETENTION), timedelta(hours=1))
