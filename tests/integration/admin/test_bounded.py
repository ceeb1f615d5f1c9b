"""What a list or the overview reads stays bounded, whatever the table size:
the SQL each runs, checked here; the plans at 1M jobs are in BENCHMARKS.md."""

from __future__ import annotations

import datetime as dt
from unittest import mock

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from robust_queue.admin.counting import CappedPaginator
from robust_queue.admin.dashboard import stats
from robust_queue.models import Job, ReadyExecution, Statistic
from robust_queue.models.sql import failure_search
from robust_queue.models.statistic import TOTALS_MINUTE
from robust_queue.operations import queue_names
from robust_queue.operations.counting import DEFAULT_COUNT_CAP
from testproject import tasks
from tests.helpers import work_off
from tests.integration.admin.base import AdminTestCase, changelist


def _sql(queries: CaptureQueriesContext) -> list[str]:
    return [query["sql"] for query in queries.captured_queries]


def _from_jobs() -> str:
    return f"FROM {connection.ops.quote_name('robust_queue_job')}"


class SearchTests(AdminTestCase):
    def test_a_task_path_search_reads_the_known_task_paths_index(self) -> None:
        self.login(self.viewer)
        with CaptureQueriesContext(connection) as queries:
            response = self.client.get(changelist(q="tasks.add"))
        found = {job.task_path for job in response.context["cl"].result_list}
        self.assertEqual(found, {"testproject.tasks.add"})
        job_queries = [sql for sql in _sql(queries) if _from_jobs() in sql]
        self.assertTrue(job_queries)
        for sql in job_queries:
            self.assertNotIn("LIKE", sql.upper(), sql)

    def test_a_search_matching_no_known_task_reads_no_job(self) -> None:
        self.login(self.viewer)
        response = self.client.get(changelist(q="zzz-nothing"))
        self.assertEqual(list(response.context["cl"].result_list), [])

    def test_a_task_known_only_to_the_statistics_is_found(self) -> None:
        """An old task (not declared, not among the newest jobs) is known
        from its statistics' running total."""
        job = Job.objects.get(pk=self.finished.pk)
        Job.objects.filter(pk=job.pk).update(task_path="gone.module.old_task")
        Statistic.objects.create(
            minute=TOTALS_MINUTE, queue_name="default", task_path="gone.module.old_task", finished=1
        )
        self.login(self.viewer)
        with mock.patch("robust_queue.admin.jobs.search.RECENT_JOBS", 0):
            response = self.client.get(changelist(q="old_task"))
        self.assertEqual([j.pk for j in response.context["cl"].result_list], [job.pk])


class TaskAndQueueFilterTests(AdminTestCase):
    """``?task=&queue=`` reads an index range, whatever the table holds."""

    def test_a_task_s_oldest_jobs_in_one_queue_are_read_through_their_index(self) -> None:
        """The plan of the page's ids and of its capped count names the
        (task_path, queue_name, id) index: no walk of the primary key past
        every newer job of other tasks."""
        now = timezone.now()
        oldest = Job.objects.bulk_create(
            Job(task_path="old.module.task", queue_name="archive", enqueued_at=now)
            for _ in range(20)
        )
        Job.objects.bulk_create(
            Job(task_path=f"testproject.tasks.t{i % 10}", queue_name=f"q{i % 4}", enqueued_at=now)
            for i in range(3000)
        )
        _analyze_jobs()
        self.login(self.viewer)
        response = self.client.get(changelist(queue="archive", task="old.module.task"))
        self.assertEqual(
            {job.pk for job in response.context["cl"].result_list}, {job.pk for job in oldest}
        )
        jobs = response.context["cl"].queryset
        for name, query in (
            ("page", jobs.values_list("pk", flat=True)[:50]),
            ("count", jobs.order_by().values("pk")[: DEFAULT_COUNT_CAP + 1]),
        ):
            with self.subTest(query=name):
                self.assertIn("rq_job_task_queue", query.explain())


def _analyze_jobs() -> None:
    """Fresh planner statistics (MySQL/MariaDB's ANALYZE TABLE would commit
    the test's transaction; InnoDB estimates from the index itself)."""
    if connection.vendor in ("postgresql", "sqlite"):
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {connection.ops.quote_name('robust_queue_job')}")


class PageTests(AdminTestCase):
    def test_a_page_reads_its_ids_then_only_those_rows(self) -> None:
        paginator = CappedPaginator(Job.objects.with_executions().order_by("-pk"), 2)
        with CaptureQueriesContext(connection) as queries:
            rows = list(paginator.page(2).object_list)
        expected = list(Job.objects.order_by("-pk").values_list("pk", flat=True)[2:4])
        self.assertEqual([row.pk for row in rows], expected)
        ids_query, rows_query = _sql(queries)[-2:]
        self.assertNotIn("robust_queue_blocked_execution", ids_query)
        self.assertIn("robust_queue_blocked_execution", rows_query)
        self.assertIn(" IN (", rows_query)

    def test_a_state_list_joins_only_its_own_execution_table(self) -> None:
        self.login(self.viewer)
        with CaptureQueriesContext(connection) as queries:
            response = self.client.get(changelist(state="failed"))
        self.assertEqual([j.pk for j in response.context["cl"].result_list], [self.failed.pk])
        job_queries = [sql for sql in _sql(queries) if _from_jobs() in sql]
        self.assertTrue(job_queries)
        for sql in job_queries:
            self.assertNotIn("robust_queue_blocked_execution", sql)
            self.assertNotIn("robust_queue_ready_execution", sql)


class FailureGroupTests(AdminTestCase):
    def test_failure_groups_read_every_failure_through_the_index_else_the_newest(self) -> None:
        tasks.fail.enqueue("second")
        work_off()
        Job.objects.filter(pk=self.failed.pk).update(errors=[])
        from robust_queue.models import FailedExecution

        FailedExecution.objects.filter(job=self.failed).update(
            error={"exception_class_path": "old.OldError", "traceback": ""}
        )
        self.assertEqual(
            {g.exception_class for g in stats.failure_groups("default")},
            {"old.OldError", "builtins.ValueError"},
        )
        with mock.patch.object(stats, "RECENT_FAILURES", 1):
            groups = stats.failure_groups("default")
            self.login(self.viewer)
            page = self.client.get(reverse("admin:robust_queue_overview"))
        found = sorted((g.exception_class, int(g.count)) for g in groups)
        if failure_search.has_class_index("default"):
            # Migration 0024's (class, id) index: every failure, whatever
            # the window of the newest.
            self.assertEqual(found, [("builtins.ValueError", 1), ("old.OldError", 1)])
            self.assertContains(page, 'id="rq-failures-all"')
        else:
            # SQLite: the newest RECENT_FAILURES only, and the page says so.
            self.assertEqual(found, [("builtins.ValueError", 1)])
            self.assertContains(page, 'id="rq-failures-sampled"')


class QueueNameTests(AdminTestCase):
    def test_ready_queues_take_one_index_probe_per_queue(self) -> None:
        for name in ("alpha", "beta", "gamma"):
            tasks.add.using(queue_name=name).enqueue(1, 1)
        expected = set(ReadyExecution.objects.values_list("queue_name", flat=True))
        with CaptureQueriesContext(connection) as queries:
            found = queue_names.ready("default")
        self.assertEqual(found, expected)
        self.assertEqual(len(queries), len(expected) + 1)
        for sql in _sql(queries):
            self.assertNotIn("DISTINCT", sql.upper())
            self.assertIn("LIMIT", sql.upper())

    def test_a_queue_known_only_to_the_statistics_is_listed(self) -> None:
        Statistic.objects.create(
            minute=TOTALS_MINUTE,
            queue_name="archive",
            task_path="testproject.tasks.add",
            finished=1,
        )
        self.assertIn("archive", queue_names.known("default"))
        self.login(self.viewer)
        page = self.client.get(reverse("admin:robust_queue_overview"))
        self.assertContains(page, "?queue=archive")


class OrderTests(AdminTestCase):
    def test_a_hand_typed_o_keeps_the_list_s_own_order(self) -> None:
        tasks.add.enqueue(3, 4)
        work_off()
        newest = Job.objects.filter(finished_at__isnull=False).latest("pk")
        finished_at = Job.objects.get(pk=self.finished.pk).finished_at
        assert finished_at is not None
        # The newest job finished first: by finish time it comes second.
        Job.objects.filter(pk=newest.pk).update(finished_at=finished_at - dt.timedelta(hours=1))
        finished = Job.objects.filter(finished_at__isnull=False)
        expected = list(finished.order_by("-finished_at", "-pk").values_list("pk", flat=True))
        self.assertNotEqual(expected, list(finished.order_by("-pk").values_list("pk", flat=True)))
        self.login(self.viewer)
        for o in ("", "1", "-1", "5", "x"):
            with self.subTest(o=o):
                response = self.client.get(changelist(state="finished", o=o))
                self.assertEqual([j.pk for j in response.context["cl"].result_list], expected)


class StateOrderTests(AdminTestCase):
    """A state's list is ordered on its own table alone once a field of it
    is unique there: no tie-breaker on the job table after it (an order
    over two tables, which MariaDB sorted after joining every failure:
    2.9 s at 10M jobs; BENCHMARKS.md, "Admin at 10M jobs on MariaDB")."""

    def test_a_state_list_orders_by_its_own_table_only(self) -> None:
        self.login(self.viewer)
        # list -> (its query string, a column its order names)
        lists = {
            "ready": ({}, "job_id"),
            "claimed": ({}, "job_id"),
            "blocked": ({}, "id"),
            "failed": ({}, "id"),
            "failed by time": ({"o": "-3"}, "created_at"),
            "ready by priority": ({"o": "3"}, "priority"),
        }
        for name, (params, column) in lists.items():
            state = name.split()[0]
            with self.subTest(list=name), CaptureQueriesContext(connection) as queries:
                response = self.client.get(changelist(state=state, **params))
            self.assertEqual(response.status_code, 200)
            self.assertEqual(len(response.context["cl"].result_list), 1)
            table = f"robust_queue_{state}_execution{_quote()}"
            orders = [order for order in _orders(queries) if table in order]
            self.assertTrue(orders, _sql(queries))
            for order in orders:
                self.assertIn(f"{_quote()}{column}{_quote()}", order)
                self.assertNotIn(f"{Job._meta.db_table}{_quote()}", order)

    def test_a_list_ordered_off_its_own_table_keeps_the_tie_breaker(self) -> None:
        self.login(self.viewer)
        with CaptureQueriesContext(connection) as queries:
            self.client.get(changelist(state="finished"))
        orders = [order for order in _orders(queries) if "finished_at" in order]
        self.assertTrue(orders, _sql(queries))
        for order in orders:
            self.assertIn(f"{Job._meta.db_table}{_quote()}.{_quote()}id{_quote()}", order)


def _orders(queries: CaptureQueriesContext) -> list[str]:
    """The ORDER BY clause of each query that has one."""
    return [sql.rsplit("ORDER BY", 1)[1] for sql in _sql(queries) if "ORDER BY" in sql]


def _quote() -> str:
    return connection.ops.quote_name("x")[-1]


class GroupedNumbersTests(AdminTestCase):
    def test_the_concurrency_page_groups_thousands(self) -> None:
        from django.utils import timezone

        from robust_queue.models import Semaphore

        Semaphore.objects.create(
            key="big", value=12345, expires_at=timezone.now() + dt.timedelta(minutes=5)
        )
        self.login(self.viewer)
        page = self.client.get(reverse("admin:robust_queue_concurrency"))
        self.assertContains(page, '<td class="rq-num">12,345</td>', html=True)
