"""Job metadata: set at enqueue (job_metadata(), @on_enqueue), stored on
the job, read in the task with metadata(context)."""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from django.db import connection
from django.test import TestCase, TransactionTestCase
from django.test.utils import CaptureQueriesContext

import robust_queue
from robust_queue.compat import Task, TaskResult, task_started
from robust_queue.exceptions import EnqueueError, PayloadTooLargeError, ProcessExitError
from robust_queue.models import ClaimedExecution, Job
from robust_queue.running import enqueue_metadata as metadata_module
from testproject import tasks
from tests.helpers import claim, work_off


def stored(result: TaskResult) -> Any:
    return Job.objects.get(result_id=result.id).metadata


def hook(function: Any) -> Any:
    """Register ``function`` with @on_enqueue for one test."""
    robust_queue.on_enqueue(function)
    return function


class JobMetadataTests(TestCase):
    def test_a_job_without_metadata_stores_an_empty_dict(self) -> None:
        result = tasks.with_metadata.enqueue()
        self.assertEqual(stored(result), {})
        work_off()
        self.assertEqual(tasks.with_metadata.get_result(result.id).return_value, {})

    def test_metadata_travels_to_the_task(self) -> None:
        with robust_queue.job_metadata({"trace_id": "abc", "tenant": 7}):
            result = tasks.with_metadata.enqueue()
        after = tasks.with_metadata.enqueue()
        self.assertEqual(stored(result), {"trace_id": "abc", "tenant": 7})
        self.assertEqual(stored(after), {})
        work_off()
        self.assertEqual(
            tasks.with_metadata.get_result(result.id).return_value,
            {"trace_id": "abc", "tenant": 7},
        )

    def test_blocks_nest_by_merging(self) -> None:
        with robust_queue.job_metadata({"trace_id": "outer", "tenant": 7}):
            with robust_queue.job_metadata({"trace_id": "inner"}) as current:
                inner = tasks.add.enqueue(1, 2)
            outer = tasks.add.enqueue(1, 2)
        self.assertEqual(current, {"trace_id": "inner", "tenant": 7})
        self.assertEqual(stored(inner), {"trace_id": "inner", "tenant": 7})
        self.assertEqual(stored(outer), {"trace_id": "outer", "tenant": 7})

    def test_enqueue_all_and_the_async_twins_carry_it(self) -> None:
        with robust_queue.job_metadata({"trace_id": "bulk"}):
            bulk = robust_queue.enqueue_all([(tasks.add, (1, 2), {}), (tasks.add, (3, 4), {})])
            later = async_to_sync(tasks.add.aenqueue)(5, 6)
        self.assertEqual([stored(r) for r in [*bulk, later]], [{"trace_id": "bulk"}] * 3)

    def test_an_on_enqueue_hook_adds_to_every_job(self) -> None:
        seen: list[Task] = []

        def trace(task: Task) -> dict[str, str]:
            seen.append(task)
            return {"trace_id": "from-hook", "source": "hook"}

        hook(trace)
        self.addCleanup(metadata_module._HOOKS.remove, trace)
        plain = tasks.add.enqueue(1, 2)
        with robust_queue.job_metadata({"trace_id": "explicit"}):
            explicit = tasks.add.enqueue(1, 2)
        self.assertEqual(stored(plain), {"trace_id": "from-hook", "source": "hook"})
        # Keys set with job_metadata() win over the hook's.
        self.assertEqual(stored(explicit), {"trace_id": "explicit", "source": "hook"})
        self.assertEqual([t.module_path for t in seen], ["testproject.tasks.add"] * 2)

    def test_a_hook_returning_none_adds_nothing(self) -> None:
        nothing = hook(lambda task: None)
        self.addCleanup(metadata_module._HOOKS.remove, nothing)
        self.assertEqual(stored(tasks.add.enqueue(1, 2)), {})

    def test_it_survives_a_retry(self) -> None:
        with robust_queue.job_metadata({"trace_id": "again"}):
            result = tasks.spin_limited_retried.enqueue("metadata-retry")
        claim()
        ClaimedExecution.objects.all().fail_all_with(ProcessExitError, "worker died")
        (claimed,) = claim()
        self.assertEqual(len(claimed.job.worker_ids), 2)
        self.assertEqual(claimed.job.metadata, {"trace_id": "again"})
        self.assertEqual(stored(result), {"trace_id": "again"})

    def test_task_started_receivers_read_it_from_the_result(self) -> None:
        """While the job runs, its metadata is read from memory: no query."""
        seen: list[dict[str, Any]] = []
        queries: list[int] = []

        def receiver(sender: Any, task_result: TaskResult, **kwargs: Any) -> None:
            with CaptureQueriesContext(connection) as captured:
                seen.append(robust_queue.metadata(task_result))
            queries.append(len(captured))

        task_started.connect(receiver)
        self.addCleanup(task_started.disconnect, receiver)
        with robust_queue.job_metadata({"traceparent": "00-abc-def-01"}):
            tasks.add.enqueue(1, 2)
        work_off()
        self.assertEqual(seen, [{"traceparent": "00-abc-def-01"}])
        self.assertEqual(queries, [0])

    def test_outside_a_worker_it_is_read_from_the_database(self) -> None:
        with robust_queue.job_metadata({"trace_id": "stored"}):
            result = tasks.add.enqueue(1, 2)
        self.assertEqual(robust_queue.metadata(result), {"trace_id": "stored"})
        with self.assertRaisesMessage(
            TypeError, "metadata() takes a TaskContext or a TaskResult, not str"
        ):
            robust_queue.metadata("abc")  # type: ignore[arg-type]


class BadMetadataTests(TestCase):
    def test_bad_values_are_refused_before_the_block(self) -> None:
        cases: list[tuple[Any, type[Exception], str]] = [
            (["trace"], TypeError, "metadata must be a dict, not list"),
            ({1: "x"}, TypeError, "metadata keys must be strings, not 1"),
            ({"when": object()}, TypeError, "metadata must be JSON-serialisable"),
            ({"ratio": float("nan")}, TypeError, "metadata must be JSON-serialisable"),
            ({"blob": "x" * 9000}, PayloadTooLargeError, "the limit is 8192 bytes"),
        ]
        for values, error, message in cases:
            with self.subTest(values=str(values)[:30]):
                with self.assertRaisesMessage(error, message):
                    with robust_queue.job_metadata(values):
                        tasks.add.enqueue(1, 2)
        self.assertFalse(Job.objects.exists())

    def test_merged_blocks_over_the_limit_are_refused(self) -> None:
        with robust_queue.job_metadata({"a": "x" * 5000}):
            with self.assertRaisesMessage(PayloadTooLargeError, "job_metadata(): metadata is"):
                with robust_queue.job_metadata({"b": "y" * 5000}):
                    pass

    def test_a_bad_hook_writes_nothing(self) -> None:
        def bad(task: Task) -> Any:
            return {"when": object()}

        def broken(task: Task) -> Any:
            raise RuntimeError("no tracer")

        for function, error, message in [
            (
                bad,
                TypeError,
                "@on_enqueue hook 'BadMetadataTests.test_a_bad_hook_writes_nothing.<locals>.bad'",
            ),
            (broken, EnqueueError, "failed for testproject.tasks.add: RuntimeError('no tracer')"),
        ]:
            with self.subTest(hook=function.__name__):
                hook(function)
                try:
                    with self.assertRaisesMessage(error, message):
                        robust_queue.enqueue_all([(tasks.add, (1, 2), {}), (tasks.add, (3, 4), {})])
                finally:
                    metadata_module._HOOKS.remove(function)
        self.assertFalse(Job.objects.exists())

    def test_on_enqueue_needs_a_callable(self) -> None:
        with self.assertRaisesMessage(TypeError, "@on_enqueue needs a callable, not 'x'"):
            robust_queue.on_enqueue("x")  # type: ignore[arg-type]


class EnqueueCostTests(TransactionTestCase):
    def test_a_job_without_metadata_is_still_one_statement_on_postgresql(self) -> None:
        """And one INSERT per table elsewhere: metadata adds no statement."""
        for values in ({}, {"trace_id": "abc"}):
            with self.subTest(values=values):
                with (
                    robust_queue.job_metadata(values),
                    CaptureQueriesContext(connection) as queries,
                ):
                    tasks.add.enqueue(1, 2)
                # MySQL/MariaDB send them as one text: count its statements.
                writes = [
                    s
                    for q in queries
                    for s in q["sql"].split("; ")
                    if not s.startswith(("SAVEPOINT", "RELEASE"))
                ]
                expected = 1 if connection.vendor == "postgresql" else 2
                inserts = [s for s in writes if "INSERT" in s.upper()]
                self.assertEqual(len(inserts), expected, writes)
