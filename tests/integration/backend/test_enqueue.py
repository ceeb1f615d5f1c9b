"""Enqueueing: validation, scheduling, bulk writes, nothing half-written."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from unittest import mock, skipUnless
from uuid import UUID

from django.db import connection
from django.test import TestCase, TransactionTestCase, override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import robust_queue
from robust_queue.arguments import TAG
from robust_queue.compat import InvalidTask, TaskResultStatus
from robust_queue.exceptions import PayloadTooLargeError
from robust_queue.models import Job, ReadyExecution, ScheduledExecution
from robust_queue.models.sql import NOTIFY_CHANNEL
from testproject import tasks
from testproject.models import LedgerEntry


class EnqueueTests(TestCase):
    def test_due_task_becomes_ready_with_queue_and_priority(self) -> None:
        result = tasks.report.enqueue(3)
        job = Job.objects.with_executions().get(result_id=result.id)
        self.assertEqual(job.ready_execution.queue_name, "reports")
        self.assertEqual(job.ready_execution.priority, 10)
        self.assertEqual(job.task_path, "testproject.tasks.report")
        self.assertIsNotNone(result.enqueued_at)

    def test_future_run_after_becomes_scheduled(self) -> None:
        when = timezone.now() + timedelta(minutes=5)
        result = tasks.add.using(run_after=when).enqueue(1, 2)
        row = ScheduledExecution.objects.get(job__result_id=result.id)
        self.assertEqual(row.scheduled_at, when)
        self.assertEqual(result.status, TaskResultStatus.READY)
        self.assertFalse(ReadyExecution.objects.exists())

    def test_past_run_after_is_ready_at_once(self) -> None:
        tasks.add.using(run_after=timezone.now() - timedelta(seconds=1)).enqueue(1, 2)
        self.assertEqual(ReadyExecution.objects.count(), 1)

    def test_naive_run_after_is_refused(self) -> None:
        with self.assertRaisesMessage(InvalidTask, "run_after must be an aware datetime"):
            tasks.add.using(run_after=datetime(2030, 1, 1)).enqueue(1, 2)
        self.assertEqual(Job.objects.count(), 0)

    def test_priority_out_of_range_is_refused(self) -> None:
        for priority in (101, -101):
            with (
                self.subTest(priority=priority),
                self.assertRaisesMessage(
                    InvalidTask, "priority must be a whole number between -100 and 100"
                ),
            ):
                tasks.add.using(priority=priority)

    @override_settings(
        TASKS={
            "default": {
                "BACKEND": "robust_queue.backend.RobustQueueBackend",
                "QUEUES": ["default", "reports"],
            }
        }
    )
    def test_unknown_queue_is_refused(self) -> None:
        with self.assertRaisesMessage(InvalidTask, "Queue 'nope' is not valid"):
            tasks.add.using(queue_name="nope").enqueue(1, 2)
        self.assertEqual(Job.objects.count(), 0)

    def test_too_long_queue_name_is_refused(self) -> None:
        with self.assertRaisesMessage(InvalidTask, "longer than 64 characters"):
            tasks.add.using(queue_name="q" * 65)

    @override_settings(
        TASKS={
            "default": {
                "BACKEND": "robust_queue.backend.RobustQueueBackend",
                "QUEUES": [],
                "OPTIONS": {"max_payload_bytes": 100},
            }
        }
    )
    def test_payload_over_the_limit_is_refused(self) -> None:
        with self.assertRaisesMessage(PayloadTooLargeError, "the limit is 100 bytes"):
            tasks.echo.enqueue("x" * 200)
        self.assertEqual(Job.objects.count(), 0)


class BulkEnqueueTests(TestCase):
    def test_enqueue_all_writes_one_insert_per_table(self) -> None:
        later = timezone.now() + timedelta(hours=1)
        calls = [(tasks.add, (i, i), {}) for i in range(20)]
        calls += [(tasks.add.using(run_after=later), (i, 0), {}) for i in range(5)]
        with CaptureQueriesContext(connection) as queries:
            results = robust_queue.enqueue_all(calls)
        inserts = [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith("INSERT")]
        self.assertEqual(len(inserts), 3, inserts)
        self.assertEqual(len(results), 25)
        self.assertEqual(ReadyExecution.objects.count(), 20)
        self.assertEqual(ScheduledExecution.objects.count(), 5)
        self.assertEqual(results[3].args, [3, 3])
        self.assertEqual(
            [Job.objects.get(result_id=r.id).args for r in results[:2]], [[0, 0], [1, 1]]
        )

    @skipUnless(connection.vendor == "postgresql", "one-statement enqueue is PostgreSQL's")
    def test_ready_jobs_are_one_statement_on_postgresql(self) -> None:
        with self.assertNumQueries(1):
            single = tasks.report.enqueue(7)
        calls = [(tasks.add.using(priority=i), (i, 0), {}) for i in range(-2, 3)]
        calls.append((tasks.report, (9,), {}))
        with self.assertNumQueries(1):
            results = robust_queue.enqueue_all(calls)
        jobs = Job.objects.with_executions().in_bulk(
            [single.id, *(r.id for r in results)], field_name="result_id"
        )
        for result in [single, *results]:
            job = jobs[result.id]
            self.assertEqual(job.args, result.args)
            self.assertEqual(
                (job.ready_execution.queue_name, job.ready_execution.priority),
                (job.queue_name, job.priority),
            )
        self.assertEqual(jobs[results[0].id].priority, -2)
        self.assertEqual(jobs[results[-1].id].queue_name, "reports")

    def test_enqueue_all_is_all_or_nothing_on_bad_input(self) -> None:
        calls = [(tasks.add, (1, 2), {}), (tasks.echo, (object(),), {})]
        with self.assertRaisesMessage(TypeError, "args[0]"):
            robust_queue.enqueue_all(calls)
        self.assertEqual(Job.objects.count(), 0)

    def test_backend_enqueue_all_refuses_a_task_of_another_backend(self) -> None:
        backend = tasks.add.get_backend()
        with self.assertRaisesMessage(InvalidTask, "uses backend 'separate'"):
            backend.enqueue_all([(tasks.add.using(backend="separate"), (1, 2), {})])

    def test_enqueue_all_of_nothing_returns_nothing(self) -> None:
        self.assertEqual(robust_queue.enqueue_all([]), [])
        with self.assertNumQueries(0):
            self.assertEqual(Job.objects.enqueue_all([]), [])


@skipUnless(connection.vendor == "postgresql", "LISTEN/NOTIFY is PostgreSQL's")
class NotifyTests(TransactionTestCase):
    def test_making_jobs_ready_notifies_each_queue_once_at_commit(self) -> None:
        import psycopg

        settings = connection.settings_dict
        listener = psycopg.connect(
            dbname=settings["NAME"],
            host=settings["HOST"],
            port=settings["PORT"],
            user=settings["USER"],
            autocommit=True,
        )
        self.addCleanup(listener.close)
        listener.execute(f"LISTEN {NOTIFY_CHANNEL}")
        robust_queue.enqueue_all(
            [(tasks.add, (1, 2), {}), (tasks.add, (3, 4), {}), (tasks.report, (1,), {})]
        )
        tasks.add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(5, 6)
        payloads = [n.payload for n in listener.notifies(timeout=2, stop_after=2)]
        self.assertEqual(sorted(payloads), ["default", "reports"])
        self.assertEqual([n.payload for n in listener.notifies(timeout=0.3)], [])


class EnqueuedResultArgumentsTests(TestCase):
    def test_the_result_shows_the_arguments_given_without_decoding_them(self) -> None:
        """The enqueue result carries the arguments as ``get_result()``
        shows them (tuples as lists, rich values as themselves, models as
        references) without decoding the encoding just written."""
        entry = LedgerEntry.objects.create(key="shown")
        args = ((1, (2, 3.5)), -0.0, 1e308, Decimal("1.10"), date(2026, 1, 2))
        kwargs = {
            "when": datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
            "span": timedelta(days=1, microseconds=7),
            "id": UUID(int=5),
            "tagged": {TAG: "x", "nested": [entry]},
        }
        with mock.patch(
            "robust_queue.running.results.decode_arguments", side_effect=AssertionError
        ):
            result = tasks.echo.enqueue(*args, **kwargs)
        stored = tasks.echo.get_result(result.id)
        self.assertEqual(result.args, stored.args)
        self.assertEqual(result.kwargs, stored.kwargs)
        self.assertEqual(result.args[0], [1, [2, 3.5]])
        self.assertEqual(math.copysign(1.0, result.args[1]), -1.0)
        reference = {TAG: "model", "v": {"model": "testproject.ledgerentry", "pk": entry.pk}}
        self.assertEqual(result.kwargs["tagged"], {TAG: "x", "nested": [reference]})
