"""Dependencies under concurrency: dispatchers that release waiting jobs at
the same time move each job exactly once, and skip (never wait for) jobs
another transaction holds."""

from __future__ import annotations

import threading
import time
import unittest

from django.db import connection, transaction
from django.test import TransactionTestCase

import robust_queue
from robust_queue.models import BlockedExecution, FailedExecution, JobDependency, ReadyExecution
from testproject import tasks
from tests.helpers import run_in_threads, work_off

CHILDREN = 60
DISPATCHERS = 4
BATCH = 5


@unittest.skipIf(connection.vendor == "sqlite", "SQLite has no row locks to race on")
class DependencyReleaseRaceTests(TransactionTestCase):
    def _children_of(self, parent_task: object, *args: object) -> list[str]:
        parent = parent_task.enqueue(*args)  # type: ignore[attr-defined]
        ids = [robust_queue.enqueue_after([parent], tasks.add, (n, n)).id for n in range(CHILDREN)]
        work_off()
        return ids

    def _release_concurrently(self) -> int:
        def release() -> int:
            return JobDependency.objects.release_all_in_batches(BATCH)

        counts = run_in_threads([release] * DISPATCHERS)
        return sum(counts)  # type: ignore[arg-type]

    def test_two_dispatchers_release_each_job_once(self) -> None:
        """Dispatchers racing over the same waiting jobs release each one
        once: the counts add up to the number of jobs, each is ready once."""
        self._children_of(tasks.add, 1, 1)
        self.assertEqual(self._release_concurrently(), CHILDREN)
        self.assertEqual(ReadyExecution.objects.count(), CHILDREN)
        self.assertFalse(BlockedExecution.objects.exists())
        self.assertFalse(JobDependency.objects.exists())

    def test_concurrent_passes_fail_each_dependent_once(self) -> None:
        self._children_of(tasks.fail, "boom")
        self.assertEqual(self._release_concurrently(), CHILDREN)
        self.assertEqual(FailedExecution.objects.count(), CHILDREN + 1)
        for job_errors in FailedExecution.objects.values_list("job__errors", flat=True):
            self.assertEqual(len(job_errors), 1)

    def test_a_pass_skips_jobs_another_transaction_holds(self) -> None:
        """A waiting job locked by another pass is skipped at once, not
        waited for, and released by a later pass."""
        parent = tasks.add.enqueue(1, 1)
        child = robust_queue.enqueue_after([parent], tasks.add, (2, 2))
        work_off()
        waiting = BlockedExecution.objects.get(job__result_id=child.id).pk
        locked, let_go = threading.Event(), threading.Event()

        def hold() -> None:
            with transaction.atomic():
                BlockedExecution.objects.select_for_update().get(pk=waiting)
                locked.set()
                let_go.wait(10)

        def release() -> tuple[int, float]:
            locked.wait(10)
            started = time.monotonic()
            moved = JobDependency.objects.release_all_in_batches()
            let_go.set()
            return moved, time.monotonic() - started

        _, (moved, took) = run_in_threads([hold, release])  # type: ignore[misc]
        self.assertEqual(moved, 0)
        self.assertLess(took, 0.5)
        self.assertTrue(JobDependency.objects.exists())
        self.assertEqual(JobDependency.objects.release_all_in_batches(), 1)
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=child.id).exists())
