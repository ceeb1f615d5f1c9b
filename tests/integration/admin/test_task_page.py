"""A task's page: run time and wait percentiles, throughput and failure
rate from the recorded statistics (never the jobs table); the busiest
tasks on the overview; charts labelled in the admin's time zone."""

from __future__ import annotations

import datetime as dt

from django.db import connection
from django.test import SimpleTestCase
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from robust_queue.admin import pages
from robust_queue.admin.dashboard import task_stats
from robust_queue.admin.dashboard.chart import bar_chart
from robust_queue.admin.dashboard.stats import Bucket
from robust_queue.models import Statistic
from robust_queue.models.statistic import BUCKETS, COLUMNS, minute_of
from tests.integration.admin.base import AdminTestCase, job_url

TASK = "testproject.tasks.add"


def _record(
    minutes_ago: int,
    finished: int,
    failed: int,
    run_bucket: int,
    wait_bucket: int,
    task_path: str = TASK,
) -> None:
    """Statistics of ``finished + failed`` attempts ``minutes_ago``."""
    numbers = dict.fromkeys(COLUMNS, 0.0)
    numbers.update(finished=finished, failed=failed)
    numbers[f"run_{run_bucket}"] = finished + failed
    numbers[f"wait_{wait_bucket}"] = finished + failed
    minute = minute_of(timezone.now() - dt.timedelta(minutes=minutes_ago))
    Statistic.objects.add_all({(minute, "default", task_path): [numbers[c] for c in COLUMNS]})


class QuantileTests(SimpleTestCase):
    def test_quantiles_interpolate_within_a_bucket(self) -> None:
        counts = [0] * BUCKETS
        counts[7] = 100  # (0.5 s, 1 s]
        self.assertAlmostEqual(task_stats.quantile(tuple(counts), 0.5) or 0, 0.75)
        self.assertAlmostEqual(task_stats.quantile(tuple(counts), 0.95) or 0, 0.975)
        self.assertEqual(task_stats.shown_quantile(tuple(counts), 0.5), "≈ 750 ms")

    def test_past_the_last_bound_and_no_data_say_so(self) -> None:
        counts = [0] * BUCKETS
        counts[-1] = 3
        self.assertIsNone(task_stats.quantile(tuple(counts), 0.5))
        self.assertEqual(task_stats.shown_quantile(tuple(counts), 0.5), "> 30 min")
        self.assertEqual(task_stats.shown_quantile(tuple([0] * BUCKETS), 0.5), "—")
        with self.assertRaisesMessage(ValueError, "no observations"):
            task_stats.quantile(tuple([0] * BUCKETS), 0.5)

    def test_durations_read_well(self) -> None:
        self.assertEqual(task_stats.seconds(0.0123), "12 ms")
        self.assertEqual(task_stats.seconds(2.5), "2.5 s")
        self.assertEqual(task_stats.seconds(245), "4 min 5 s")


class ChartZoneTests(SimpleTestCase):
    def test_hour_labels_are_local_times_in_a_half_hour_zone(self) -> None:
        start = dt.datetime(2026, 1, 1, 0, 0, tzinfo=dt.UTC)
        buckets = [Bucket(start + dt.timedelta(hours=h), 1, 0) for h in range(24)]
        with timezone.override("Asia/Kolkata"):
            chart = bar_chart("Last day, per hour", buckets, "%H:%M")
        labels = [label for _, label in chart.x_labels]
        self.assertEqual(labels[0], "05:30")  # 00:00 UTC
        self.assertTrue(all(label.endswith(":30") for label in labels), labels)
        self.assertEqual(chart.zone, "Asia/Kolkata")
        self.assertIn("05:30 (Asia/Kolkata)", chart.bars[0].title)


class TaskPageTests(AdminTestCase):
    def setUp(self) -> None:
        Statistic.objects.all().delete()
        _record(5, finished=90, failed=10, run_bucket=7, wait_bucket=4)
        _record(120, finished=200, failed=0, run_bucket=9, wait_bucket=4)
        self.login(self.viewer)

    def test_the_page_shows_percentiles_throughput_and_failure_rate(self) -> None:
        with CaptureQueriesContext(connection) as queries:
            page = self.client.get(pages.task_url(TASK))
        self.assertEqual(page.status_code, 200)
        (hour_label, hour), (day_label, day) = page.context["windows"]
        self.assertEqual((hour_label, hour.finished, hour.failed), ("Last hour", 90, 10))
        self.assertEqual((day_label, day.finished, day.failed), ("Last day", 290, 10))
        self.assertEqual(hour.failure_rate, "10.0%")
        self.assertEqual(hour.throughput, "1.5/min")
        self.assertEqual(day.throughput, "12.1/h")  # 290 in a day
        self.assertEqual(hour.run_p50, "≈ 750 ms")
        # Rank 285 of 300: the 185th of the 200 runs in (2.5 s, 5 s].
        self.assertEqual(day.run_p95, "≈ 4.8 s")
        self.assertEqual(hour.wait_p50, "≈ 75 ms")  # bucket (50 ms, 100 ms]
        self.assertContains(page, "10.0%")
        statistics = connection.ops.quote_name("robust_queue_statistic")
        self.assertTrue(any(statistics in query["sql"] for query in queries.captured_queries))
        jobs = connection.ops.quote_name("robust_queue_job")
        for query in queries.captured_queries:
            self.assertNotIn(jobs, query["sql"])

    def test_the_overview_lists_the_busiest_tasks_with_links(self) -> None:
        _record(
            3,
            finished=5,
            failed=0,
            run_bucket=1,
            wait_bucket=1,
            task_path="testproject.tasks.report",
        )
        page = self.client.get(reverse("admin:robust_queue_overview"))
        top = [(path, windows[0][1].attempts) for path, _, windows in page.context["top_tasks"]]
        self.assertEqual(top, [(TASK, 100), ("testproject.tasks.report", 5)])
        self.assertContains(page, f'href="{pages.task_url(TASK)}"')

    def test_jobs_link_their_task_page(self) -> None:
        url = pages.task_url(TASK)
        self.assertContains(self.client.get(job_url("change", self.finished.pk)), url)
        self.assertContains(self.client.get(job_url("changelist")), url)

    def test_a_task_without_statistics_renders(self) -> None:
        page = self.client.get(pages.task_url("nowhere.task"))
        self.assertEqual(page.status_code, 200)
        self.assertContains(page, "nowhere.task")
        self.assertEqual(page.context["windows"][0][1].run_p95, "—")

    def test_staff_without_the_view_permission_are_refused(self) -> None:
        from tests.integration.admin.base import make_staff

        self.client.force_login(make_staff("nobody"))
        self.assertEqual(self.client.get(pages.task_url(TASK)).status_code, 403)
