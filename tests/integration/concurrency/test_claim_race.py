"""Claimers racing on real connections never share or lose a job."""

from __future__ import annotations

import threading
from datetime import timedelta

from django.test import TransactionTestCase
from django.utils import timezone

import robust_queue
from robust_queue.models import Job, ReadyExecution, ScheduledExecution
from testproject import tasks
from tests.helpers import claim, run_in_threads

JOBS = 300
CLAIMERS = 4


def _in_threads(count: int, target) -> list:  # type: ignore[no-untyped-def]
    """Run ``target`` in ``count`` threads that start together."""
    barrier = threading.Barrier(count)

    def started_together():  # type: ignore[no-untyped-def]
        barrier.wait()
        return target()

    return run_in_threads([started_together] * count, timeout=60)


class ClaimRaceTests(TransactionTestCase):
    """SQLite serialises with IMMEDIATE transactions; PG/MariaDB skip locks."""

    def test_concurrent_claimers_take_each_job_exactly_once(self) -> None:
        robust_queue.enqueue_all([(tasks.add, (i, i), {}) for i in range(JOBS)])

        def claim_until_empty() -> list[int]:
            taken: list[int] = []
            while batch := claim(7, worker_id=threading.current_thread().name):
                taken += [row.job_id for row in batch]
            return taken

        claimed = [job_id for batch in _in_threads(CLAIMERS, claim_until_empty) for job_id in batch]
        self.assertEqual(len(claimed), JOBS)
        self.assertEqual(len(set(claimed)), JOBS)
        self.assertFalse(ReadyExecution.objects.exists())
        workers = Job.objects.values_list("worker_ids", flat=True)
        self.assertTrue(all(len(ids) == 1 for ids in workers))

    def test_concurrent_dispatchers_move_each_job_exactly_once(self) -> None:
        past = timezone.now() - timedelta(seconds=1)
        robust_queue.enqueue_all(
            [
                (tasks.add.using(run_after=timezone.now() + timedelta(hours=1)), (i, i), {})
                for i in range(JOBS)
            ]
        )
        ScheduledExecution.objects.update(scheduled_at=past)

        def dispatch_until_empty() -> int:
            moved = 0
            while count := ScheduledExecution.objects.dispatch_next_batch(25):
                moved += count
            return moved

        moved = _in_threads(CLAIMERS, dispatch_until_empty)
        self.assertEqual(sum(moved), JOBS)
        self.assertEqual(ReadyExecution.objects.count(), JOBS)
        self.assertFalse(ScheduledExecution.objects.exists())
