"""Operations: discard, run now, pause, bulk retry while workers claim."""

from __future__ import annotations

import threading
from datetime import timedelta

from django.db import connections
from django.test import TestCase, TransactionTestCase
from django.utils import timezone

from robust_queue.exceptions import UndiscardableError
from robust_queue.models import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    Job,
    Queue,
    ReadyExecution,
    Semaphore,
)
from robust_queue.operations import bulk as operations
from testproject import control_tasks as ct
from testproject import tasks
from tests.helpers import claim, work_off


class DiscardTests(TestCase):
    def test_discarding_a_ready_job_releases_its_slot(self) -> None:
        first = ct.short_lease.enqueue("a")
        waiting = ct.short_lease.enqueue("b")
        self.assertIs(Job.objects.get(result_id=first.id).discard(), True)
        self.assertEqual(ReadyExecution.objects.get().job.result_id, waiting.id)
        self.assertEqual(Semaphore.objects.get().value, 0)

    def test_discarding_a_blocked_job_keeps_the_holder_slot(self) -> None:
        ct.short_lease.enqueue("a")
        waiting = ct.short_lease.enqueue("b")
        Job.objects.get(result_id=waiting.id).discard()
        self.assertFalse(BlockedExecution.objects.exists())
        self.assertEqual(Semaphore.objects.get().value, 0)

    def test_a_running_job_cannot_be_discarded(self) -> None:
        result = tasks.add.enqueue(1, 2)
        claim()
        job = Job.objects.get(result_id=result.id)
        with self.assertRaisesMessage(UndiscardableError, "is running"):
            job.discard()
        self.assertTrue(ClaimedExecution.objects.exists())

    def test_discard_in_batches_skips_running_jobs(self) -> None:
        tasks.add.enqueue(0, 0)
        claim()
        tasks.add.enqueue(1, 1)
        tasks.add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(2, 2)
        tasks.fail.enqueue()
        work_off()  # the failing job fails; the claimed one stays claimed
        tasks.add.enqueue(3, 3)
        discarded = Job.objects.all().discard_all_in_batches(batch_size=2)
        self.assertEqual(discarded, 4)
        self.assertEqual(
            list(Job.objects.values_list("pk", flat=True)),
            list(ClaimedExecution.objects.values_list("job_id", flat=True)),
        )


class PauseTests(TestCase):
    def test_pausing_keeps_enqueueing(self) -> None:
        queue = Queue("default")
        queue.pause()
        tasks.add.enqueue(1, 2)
        self.assertIs(queue.is_paused(), True)
        self.assertEqual(queue.size(), 1)
        queue.resume()
        self.assertIs(queue.is_paused(), False)


class BulkRetryTests(TransactionTestCase):
    JOBS = 10_000

    def fail_all(self) -> None:
        tasks.add.get_backend().enqueue_all([(tasks.add, (i, i), {}) for i in range(self.JOBS)])
        jobs = list(ReadyExecution.objects.values_list("job_id", flat=True))
        error = {"exception_class_path": "builtins.ValueError", "traceback": "boom"}
        ReadyExecution.objects.all().delete()
        FailedExecution.objects.bulk_create(
            [FailedExecution(job_id=job_id, error=error) for job_id in jobs], batch_size=1000
        )

    def test_bulk_retry_in_batches_while_workers_claim(self) -> None:
        self.fail_all()
        done = threading.Event()
        claimed: list[int] = []
        errors: list[BaseException] = []

        def worker() -> None:
            try:
                while not done.is_set() or ReadyExecution.objects.exists():
                    claimed.extend(row.job_id for row in claim(50, worker_id="w"))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
            finally:
                connections.close_all()

        threads = [threading.Thread(target=worker) for _ in range(2)]
        for thread in threads:
            thread.start()
        try:
            outcome = operations.retry(Job.objects.all(), size=500)
        finally:
            done.set()
            for thread in threads:
                thread.join(120)
        self.assertEqual(errors, [])
        self.assertEqual((outcome.changed, outcome.total), (self.JOBS, self.JOBS))
        self.assertFalse(FailedExecution.objects.exists())
        self.assertEqual(len(claimed), self.JOBS)
        self.assertEqual(len(set(claimed)), self.JOBS)
        self.assertEqual(ClaimedExecution.objects.count(), self.JOBS)
