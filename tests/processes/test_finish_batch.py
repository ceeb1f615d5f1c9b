"""A real worker writing its successes together (finish_batch): every job
finishes exactly once, failures are written on their own, and a stop in the
middle of a drain leaves every job finished or ready, none run twice."""

from __future__ import annotations

import signal
from collections import Counter

from django.db.models import Count
from django.test import TransactionTestCase

import robust_queue
from robust_queue.models import ClaimedExecution, Job, Process, ReadyExecution
from testproject import tasks
from testproject.models import LedgerEntry
from tests.helpers import wait_until

from .support import Supervisor

WORKER = {"queues": ["*"], "threads": 3, "processes": 2, "polling_interval": 0.05}
# Batched (the default) and each thread writing its own.
BATCHES = (10, 1)


def finished() -> int:
    return Job.objects.filter(finished_at__isnull=False).count()


class FinishBatchTests(TransactionTestCase):
    def assert_each_ran_once(self) -> None:
        repeated = LedgerEntry.objects.values("key").annotate(n=Count("pk")).filter(n__gt=1)
        self.assertEqual(list(repeated), [])

    def test_every_job_finishes_once_with_its_own_value(self) -> None:
        for batch in BATCHES:
            with self.subTest(finish_batch=batch):
                self.drain_once(batch)
                self.forget_rows()

    def test_a_stop_mid_drain_leaves_each_job_finished_or_ready(self) -> None:
        for batch in BATCHES:
            with self.subTest(finish_batch=batch):
                self.stop_mid_drain(batch)
                self.forget_rows()

    def forget_rows(self) -> None:
        Job.objects.all().delete()
        LedgerEntry.objects.all().delete()

    def drain_once(self, batch: int) -> None:
        calls = [(tasks.record, (f"job-{i}",), {}) for i in range(300)]
        calls += [(tasks.fail, ("expected",), {}) for _ in range(10)]
        robust_queue.enqueue_all(calls)
        supervisor = Supervisor(self, workers=[{**WORKER, "finish_batch": batch}])
        wait_until(lambda: finished() == 300, timeout=120)
        wait_until(lambda: Job.objects.failed().count() == 10, timeout=30)
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=15), 0, supervisor.output())
        self.assertEqual(LedgerEntry.objects.count(), 300)
        self.assert_each_ran_once()
        for key, value, worker_ids in Job.objects.filter(finished_at__isnull=False).values_list(
            "arguments", "return_value", "worker_ids"
        ):
            self.assertEqual(value, key["args"][0])
            self.assertEqual(len(worker_ids), 1)
        self.assertFalse(ClaimedExecution.objects.exists())
        self.assertFalse(Process.objects.exists())

    def stop_mid_drain(self, batch: int) -> None:
        robust_queue.enqueue_all([(tasks.record, (f"job-{i}", 0.002), {}) for i in range(3000)])
        supervisor = Supervisor(self, workers=[{**WORKER, "finish_batch": batch}])
        wait_until(lambda: finished() >= 200, timeout=120)
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=30), 0, supervisor.output())
        done, ready = finished(), ReadyExecution.objects.count()
        self.assertEqual(done + ready, 3000, supervisor.output())
        self.assertFalse(ClaimedExecution.objects.exists())
        self.assertEqual(LedgerEntry.objects.count(), done)
        # A job given back did not count as an attempt: it runs once more.
        second = Supervisor(self, workers=[{**WORKER, "finish_batch": batch}])
        wait_until(lambda: finished() == 3000, timeout=180)
        second.send(signal.SIGTERM)
        self.assertEqual(second.wait(timeout=30), 0, second.output())
        self.assertEqual(LedgerEntry.objects.count(), 3000)
        self.assert_each_ran_once()
        runs = Counter(len(ids) for ids in Job.objects.values_list("worker_ids", flat=True))
        self.assertEqual(runs, {1: 3000})
