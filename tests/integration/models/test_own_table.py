"""Counts of a state's jobs read that state's table alone when every
condition is on it (``models/sql/own_table.py``), and go through the job
query otherwise; the figure is the same either way. Exception classes are
listed by one index probe a class on every database with the index."""

from __future__ import annotations

from unittest import mock

from django.db import connection
from django.db.models import OuterRef, Q
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from robust_queue.models import FailedExecution, Job
from robust_queue.models.sql import failure_search, own_table
from robust_queue.operations import counting
from robust_queue.operations.counting import capped_count, capped_count_and_top

JOB_TABLE = Job._meta.db_table


class OwnTableCountTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.failed = [
            _failed(f"job-{i}", "billing.TimeoutError" if i % 3 else "builtins.ValueError", i)
            for i in range(9)
        ]
        _job("still-waiting")

    def test_a_state_s_own_conditions_are_counted_on_its_table(self) -> None:
        top = self.failed[5].pk
        cases = {
            "the state": (Job.objects.filter(failed_execution__isnull=False), 9),
            "and a bound on the failed job id": (
                Job.objects.filter(
                    failed_execution__isnull=False, failed_execution__job_id__lte=top
                ),
                6,
            ),
            "and an error key": (
                Job.objects.filter(
                    failed_execution__error__exception_class_path="builtins.ValueError"
                ),
                3,
            ),
            "and nothing": (Job.objects.filter(failed_execution__pk__in=[]), 0),
        }
        for name, (jobs, expected) in cases.items():
            with self.subTest(name), CaptureQueriesContext(connection) as queries:
                self.assertEqual(int(capped_count(jobs, 100)), expected)
                self.assertEqual(int(capped_count(jobs, 2)), min(expected, 3))
            if expected:
                for query in queries.captured_queries:
                    self.assertNotIn(JOB_TABLE + connection.ops.quote_name("")[:1], query["sql"])

    def test_any_condition_on_the_job_reads_the_job_query(self) -> None:
        cases = {
            "a job column": Job.objects.filter(
                failed_execution__isnull=False, queue_name="default"
            ),
            "the job id": Job.objects.filter(failed_execution__isnull=False, pk__lte=10**9),
            "two states": Job.objects.filter(
                Q(failed_execution__isnull=False) | Q(ready_execution__isnull=False)
            ),
            "not failed": Job.objects.exclude(failed_execution__isnull=False),
            "a subquery": Job.objects.filter(
                failed_execution__isnull=False,
                pk__in=Job.objects.filter(queue_name="default").values("pk"),
            ),
            "a subquery on the failure that names the job": Job.objects.filter(
                failed_execution__job_id__in=Job.objects.filter(pk=OuterRef("pk")).values("pk")
            ),
        }
        cases["not a job query"] = FailedExecution.objects.filter(job__queue_name="default")
        for name, jobs in cases.items():
            with self.subTest(name):
                self.assertIsNone(own_table.rows_sql(jobs))
                self.assertEqual(int(capped_count(jobs, 100)), jobs.count())

    def test_a_count_and_its_top_are_read_together(self) -> None:
        ids = sorted(job.pk for job in self.failed)
        cases = {
            "on the failed table": Job.objects.filter(failed_execution__isnull=False),
            "through the job query": Job.objects.filter(
                failed_execution__isnull=False, queue_name="default"
            ),
        }
        for name, jobs in cases.items():
            with self.subTest(name):
                count, top = capped_count_and_top(jobs, 100)
                self.assertEqual((int(count), count.is_capped, top), (9, False, ids[-1]))
                # Past the cap: the top of them all, not of those read.
                count, top = capped_count_and_top(jobs, 2)
                self.assertEqual((int(count), count.is_capped, top), (3, True, ids[-1]))
        count, top = capped_count_and_top(Job.objects.filter(queue_name="nowhere"), 5)
        self.assertEqual((int(count), top), (0, 0))

    def test_a_few_are_taken_away_in_the_same_statement(self) -> None:
        jobs = Job.objects.filter(failed_execution__isnull=False)
        less = jobs.filter(failed_execution__error__exception_class_path="builtins.ValueError")
        top = max(job.pk for job in self.failed)
        count, read_top = capped_count_and_top(jobs, 100, less=less)
        self.assertEqual((int(count), count.is_capped, read_top), (6, False, top))
        # Without slack: 6 left of 9 read is exact at a cap of 6, past one of 5.
        with mock.patch.object(counting, "LESS_SLACK", 0):
            count, _ = capped_count_and_top(jobs, 6, less=less)
            self.assertEqual((int(count), count.is_capped), (6, False))
            count, read_top = capped_count_and_top(jobs, 5, less=less)
            self.assertEqual((int(count), count.is_capped, read_top), (6, True, top))

    def test_the_job_query_is_left_as_it_was(self) -> None:
        jobs = Job.objects.filter(failed_execution__isnull=False)
        before = str(jobs.query)
        own_table.rows_sql(jobs)
        self.assertEqual(str(jobs.query), before)
        self.assertEqual(jobs.count(), 9)


class ExceptionClassesTests(TestCase):
    def test_every_class_in_order_up_to_the_limit(self) -> None:
        names = ["a.Zeta", "a.Alpha", "b.Beta", "a.Alpha", "A.alpha"]
        for i, name in enumerate(names):
            _failed(f"class-{i}", name, i)
        listed = failure_search.exception_classes("default", 10)
        if connection.vendor == "sqlite":
            self.assertIsNone(listed)
            return
        expected = sorted(set(names))
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT name FROM unnest(%s::text[]) name ORDER BY 1", [list(set(names))]
                )
                expected = [row[0] for row in cursor.fetchall()]
        self.assertEqual(listed, expected)
        self.assertEqual(failure_search.exception_classes("default", 2), expected[:2])


def _job(result_id: str) -> Job:
    return Job.objects.create(
        result_id=result_id,
        task_path="testproject.tasks.fail",
        queue_name="default",
        backend_alias="default",
        arguments={"args": [], "kwargs": {}},
        enqueued_at=timezone.now(),
    )


def _failed(result_id: str, exception_class: str, i: int) -> Job:
    job = _job(result_id)
    FailedExecution.objects.create(
        job=job, error={"exception_class_path": exception_class, "traceback": f"#{i}"}
    )
    return job
