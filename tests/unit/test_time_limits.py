"""Time limits: declaration, validation, settings (no database)."""

from __future__ import annotations

import math
from datetime import timedelta

from django.test import SimpleTestCase, override_settings

from robust_queue import conf, time_limit
from robust_queue.checks import check_settings
from robust_queue.compat import TASK_TAKES_OPTIONS, task
from robust_queue.exceptions import ConfigurationError, JobCancelledError, ProcessExitError
from robust_queue.options.retries import RetryPolicy, retry_in
from robust_queue.options.time_limits import TIME_LIMIT, limit_for
from testproject import tasks


class DeclarationTests(SimpleTestCase):
    def test_the_decorator_and_the_setting(self) -> None:
        self.assertEqual(limit_for(tasks.spin_limited), 0.5)
        self.assertEqual(limit_for(tasks.sleep_limited), 1.0)
        self.assertIsNone(limit_for(tasks.add))
        with override_settings(ROBUST_QUEUE={"time_limit": timedelta(minutes=2)}):
            self.assertEqual(limit_for(tasks.add), 120.0)
            # A task's own limit wins over the default.
            self.assertEqual(limit_for(tasks.spin_limited), 0.5)

    def test_the_decorator_must_be_stacked_over_task(self) -> None:
        with self.assertRaisesMessage(ConfigurationError, "@time_limit must be stacked over @task"):
            time_limit(5)(lambda: None)  # type: ignore[arg-type]

    def test_bad_limits_are_clear_errors(self) -> None:
        cases = {
            -1: "must be more than 0 seconds, not -1",
            0: "must be more than 0 seconds, not 0",
            timedelta(seconds=-5): "must be more than 0 seconds",
            math.nan: "must be more than 0 seconds, not nan",
            math.inf: "must be more than 0 seconds, not inf",
            10**9: "must be at most 604800 seconds (7 days), not 1000000000",
            timedelta(days=30): "must be at most 604800 seconds (7 days)",
            "30": "must be a number of seconds or a timedelta, not '30'",
            True: "must be a number of seconds or a timedelta, not True",
            None: "must be a number of seconds or a timedelta, not None",
        }
        for value, message in cases.items():
            with self.subTest(value=value):
                with self.assertRaisesMessage(ConfigurationError, "time_limit(): " + message):
                    time_limit(value)  # type: ignore[arg-type]

    def test_good_limits_are_seconds(self) -> None:
        self.assertEqual(TIME_LIMIT.build(1), 1.0)
        self.assertEqual(TIME_LIMIT.build(0.25), 0.25)
        self.assertEqual(TIME_LIMIT.build(timedelta(hours=1)), 3600.0)

    def test_the_task_keyword_is_validated_at_declaration(self) -> None:
        if not TASK_TAKES_OPTIONS:
            self.skipTest("Django 6.0's @task takes no options")
        with self.assertRaisesMessage(
            ConfigurationError, "@task(time_limit=...): must be more than 0 seconds, not -3"
        ):
            task(time_limit=-3)(tasks.add.func)  # type: ignore[call-arg]


class SettingsTests(SimpleTestCase):
    def test_defaults(self) -> None:
        self.assertEqual(conf.get(conf.CANCEL_GRACE_PERIOD), 10.0)
        self.assertEqual(conf.get(conf.INTERRUPT_GRACE_PERIOD), 5.0)
        self.assertEqual(conf.get(conf.RETIRE_TIMEOUT), 3600.0)
        self.assertEqual(check_settings(), [])

    @override_settings(
        ROBUST_QUEUE={
            "time_limit": -1,
            "cancel_grace_period": "soon",
            "interrupt_grace_period": 0,
        }
    )
    def test_bad_settings_are_system_check_errors(self) -> None:
        messages = [message.msg for message in check_settings()]
        self.assertEqual(
            messages,
            [
                'ROBUST_QUEUE["time_limit"] must be more than 0 seconds, not -1.',
                'ROBUST_QUEUE["cancel_grace_period"] must be a number of seconds or a '
                "timedelta, not 'soon'.",
                'ROBUST_QUEUE["interrupt_grace_period"] must be more than 0 seconds, not 0.',
            ],
        )

    @override_settings(ROBUST_QUEUE={"time_limit": 1e12})
    def test_an_absurd_default_is_refused_when_used_too(self) -> None:
        with self.assertRaisesMessage(ConfigurationError, "at most 604800 seconds"):
            limit_for(tasks.add)


class CancelledIsNeverRetriedTests(SimpleTestCase):
    def test_a_policy_that_retries_everything_does_not_retry_a_cancel(self) -> None:
        self.assertIsNone(retry_in(tasks.spin_limited_retried, JobCancelledError("x"), 1))
        self.assertIsNotNone(retry_in(tasks.spin_limited_retried, ProcessExitError("x"), 1))
        # The policy object itself is unchanged.
        self.assertIsNotNone(RetryPolicy().retry_in(ValueError(), 1))
