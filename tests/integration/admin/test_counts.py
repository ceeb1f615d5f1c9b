"""Counts past the cap say what they are (issue 28 §2): the planner's
estimate on PostgreSQL ("≈"), the statistics' count of finished jobs, or
"more than N" on MariaDB and SQLite; failure groups count every failure
through an index. The cap is lowered (``counting.DEFAULT_COUNT_CAP``) so a
handful of jobs is past it."""

from __future__ import annotations

from unittest import mock

from django.db import connection
from django.test import override_settings
from django.urls import reverse

from robust_queue.admin.dashboard import stats
from robust_queue.models import FailedExecution, Job, ReadyExecution
from robust_queue.operations import counting
from robust_queue.operations.counting import CappedCount
from testproject import tasks
from tests.helpers import work_off
from tests.integration.admin.base import AdminTestCase, changelist

POSTGRESQL = connection.vendor == "postgresql"
OVERVIEW = "admin:robust_queue_overview"


def analyze(*models: type) -> None:
    """Fresh planner statistics (the tests' rows are not committed: ANALYZE
    counts its own transaction's rows)."""
    if POSTGRESQL:
        with connection.cursor() as cursor:
            for model in models:
                cursor.execute(f"ANALYZE {model._meta.db_table}")


class CappedCountTextTests(AdminTestCase):
    def test_a_count_shows_what_it_is(self) -> None:
        self.assertEqual(CappedCount(10, 10).shown, "10")
        self.assertEqual(CappedCount(11, 10).shown, "more than 10")
        self.assertEqual(CappedCount(11, 10, 1_234_567, counting.PLANNER).shown, "≈1,200,000")
        self.assertIn("planner's estimate", CappedCount(11, 10, 50, counting.PLANNER).explained)
        # An estimate under the cap says less than what was counted: dropped.
        self.assertEqual(CappedCount(11, 10, 7, counting.PLANNER).shown, "more than 10")
        # Commands keep the compact form.
        self.assertEqual(str(CappedCount(11, 10, 50, counting.PLANNER)), "10+")


class OverviewPastTheCapTests(AdminTestCase):
    def setUp(self) -> None:
        self.login(self.viewer)
        patcher = mock.patch.object(counting, "DEFAULT_COUNT_CAP", 2)
        patcher.start()
        self.addCleanup(patcher.stop)

    def test_cards_past_the_cap_show_an_estimate_or_say_more_than(self) -> None:
        for i in range(4):
            tasks.report.enqueue(i)
        analyze(ReadyExecution)
        response = self.client.get(reverse(OVERVIEW))
        ready = response.context["counts"]["ready"]
        self.assertIs(ready.is_capped, True)
        if POSTGRESQL:
            self.assertEqual(ready.shown, "≈5")
            self.assertContains(response, '<span class="rq-count" title="Counted exactly up to 2;')
        else:
            self.assertEqual(ready.shown, "more than 2")
            self.assertContains(response, ">more than 2</span>")
        self.assertContains(response, 'id="rq-counts-capped"')
        self.assertContains(response, "Counts are exact up to 2; counting further would read")

    def test_finished_past_the_cap_comes_from_the_statistics(self) -> None:
        """On every database: the statistics count the jobs finished."""
        for i in range(3):
            tasks.add.enqueue(i, i)
        work_off()
        finished = Job.objects.filter(finished_at__isnull=False).count()
        self.assertGreater(finished, 2)
        response = self.client.get(reverse(OVERVIEW))
        day = response.context["counts"]["finished_day"]
        self.assertEqual(day.source, counting.STATISTICS)
        self.assertEqual(day.shown, f"≈{finished}")
        self.assertContains(response, f">≈{finished}</span>")

    def test_no_note_under_the_cap(self) -> None:
        with mock.patch.object(counting, "DEFAULT_COUNT_CAP", 10_000):
            response = self.client.get(reverse(OVERVIEW))
        self.assertNotContains(response, 'id="rq-counts-capped"')


class FailedListPastTheCapTests(AdminTestCase):
    def test_the_list_says_of_how_many_it_shows_the_newest(self) -> None:
        for i in range(4):
            tasks.fail.enqueue(f"n{i}")
        work_off()
        analyze(Job, FailedExecution)
        self.login(self.viewer)
        with mock.patch.object(counting, "DEFAULT_COUNT_CAP", 2):
            response = self.client.get(changelist(state="failed"))
        note = response.context["rq_cap_note"]
        if POSTGRESQL:
            self.assertRegex(note, r"^Showing the newest 2 of ≈\d+ matching jobs\. Counted exactly")
        else:
            self.assertTrue(note.startswith("Showing the newest 2 of more than 2 matching jobs."))
        self.assertContains(response, 'id="rq-cap-note"')


@override_settings(ROBUST_QUEUE={"admin_mask": []})
class FailureGroupTests(AdminTestCase):
    """Groups read every failure where an index serves them (0024)."""

    def setUp(self) -> None:
        # 1 failure from the base data, 4 more of the same class.
        for i in range(4):
            tasks.fail.enqueue(f"n{i}")
        work_off()
        self.failures = FailedExecution.objects.count()
        self.login(self.viewer)

    def test_groups_count_every_failure_not_the_newest(self) -> None:
        with mock.patch.object(stats, "RECENT_FAILURES", 2):
            response = self.client.get(reverse(OVERVIEW))
        (group,) = response.context["failure_groups"]
        self.assertEqual(group.exception_class, "builtins.ValueError")
        if connection.vendor == "sqlite":
            self.assertEqual(int(group.count), 2)
            self.assertContains(response, "Among the newest 2 failures only")
        else:
            self.assertEqual(int(group.count), self.failures)
            self.assertIsNotNone(group.latest)
            self.assertContains(response, 'id="rq-failures-all"')

    def test_a_group_past_the_cap_is_estimated_or_more_than(self) -> None:
        if connection.vendor == "sqlite":
            self.skipTest("SQLite groups the newest failures only")
        analyze(FailedExecution)
        with mock.patch.object(counting, "DEFAULT_COUNT_CAP", 2):
            response = self.client.get(reverse(OVERVIEW))
        (group,) = response.context["failure_groups"]
        expected = f"≈{self.failures}" if POSTGRESQL else "more than 2"
        self.assertEqual(group.count_shown, expected)
        self.assertContains(response, f'<td class="rq-num">{expected}</td>')
