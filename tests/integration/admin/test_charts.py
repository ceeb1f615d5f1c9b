"""Charts and figures read like the rest of the admin: grouped numbers,
one time zone, named."""

from __future__ import annotations

import datetime as dt

from django.test import override_settings
from django.urls import reverse

from robust_queue.admin.dashboard.chart import LEFT, bar_chart
from robust_queue.admin.dashboard.stats import Bucket
from robust_queue.operations.counting import CappedCount
from tests.integration.admin.base import AdminTestCase

START = dt.datetime(2031, 7, 1, 10, 0, tzinfo=dt.UTC)


class ChartTests(AdminTestCase):
    def test_the_y_axis_label_is_grouped_and_has_room(self) -> None:
        chart = bar_chart("t", [Bucket(START, 9000, 1000)], "%H:%M")
        self.assertEqual(chart.y_max_shown, "10,000")
        # 13 px digits: about 8 px each, "1,000,000" needs ~60 px.
        self.assertGreaterEqual(LEFT - 4, 60)

    @override_settings(TIME_ZONE="Asia/Kolkata")
    def test_labels_are_in_the_admins_time_zone_and_say_which(self) -> None:
        chart = bar_chart("t", [Bucket(START, 1234, 0)], "%H:%M")
        self.assertEqual(chart.x_labels[0][1], "15:30")
        self.assertEqual(chart.zone, "Asia/Kolkata")
        self.assertIn("1,234 finished", chart.bars[0].title)
        self.assertEqual(chart.total_finished, "1,234")

    def test_counts_are_grouped(self) -> None:
        self.assertEqual(str(CappedCount(1234, 10_000)), "1,234")
        self.assertEqual(str(CappedCount(12_345, 10_000)), "10,000+")

    def test_the_overview_names_the_time_zone(self) -> None:
        self.login(self.viewer)
        page = self.client.get(reverse("admin:robust_queue_overview"))
        self.assertContains(page, "times in ")


class FailureHistoryTests(AdminTestCase):
    """The failure bars count attempts when they failed (#10 defect 6)."""

    def failed_this_hour(self) -> int:
        from robust_queue.admin.dashboard.stats import throughput

        return throughput("default", "hour", 24)[-1].failed

    def test_retrying_and_discarding_failures_leave_the_bars_unchanged(self) -> None:
        from robust_queue.models import FailedExecution, Job
        from testproject import tasks
        from tests.helpers import work_off

        before = self.failed_this_hour()
        for _ in range(3):
            tasks.fail.enqueue("x")
        work_off()
        self.assertEqual(self.failed_this_hour(), before + 3)
        FailedExecution.objects.all().retry_all()
        self.assertEqual(self.failed_this_hour(), before + 3)
        Job.objects.filter(
            ready_execution__isnull=False, task_path="testproject.tasks.fail"
        ).discard_all_in_batches()
        self.assertEqual(self.failed_this_hour(), before + 3)
        self.login(self.viewer)
        page = self.client.get(reverse("admin:robust_queue_overview"))
        day = page.context["charts"][1]
        self.assertEqual(day.total_failed, str(before + 3))
