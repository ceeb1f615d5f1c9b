"""Batches under concurrency: the last jobs finishing at the same moment
while dispatchers race to complete the batch fire each callback once."""

from __future__ import annotations

import time
import unittest

from django.db import connection
from django.test import TransactionTestCase

import robust_queue
from robust_queue.models import Batch, Job
from robust_queue.running.performing import perform
from testproject import tasks
from tests.helpers import claim, run_in_threads, work_off

BATCHES = 12
DISPATCHERS = 4


@unittest.skipIf(connection.vendor == "sqlite", "SQLite has no row locks to race on")
class BatchCompletionRaceTests(TransactionTestCase):
    def test_concurrent_passes_complete_each_batch_once(self) -> None:
        """Dispatchers racing over the same complete batches: the counts add
        up to the number of batches, one callback each."""
        for n in range(BATCHES):
            with robust_queue.batch(on_finish=tasks.record):
                tasks.add.enqueue(n, n)
                tasks.add.enqueue(n, 1)
        work_off()
        counts = run_in_threads([Batch.objects.complete_all_in_batches] * DISPATCHERS)
        self.assertEqual(sum(counts), BATCHES)  # type: ignore[arg-type]
        self.assertEqual(Job.objects.filter(task_path=tasks.record.module_path).count(), BATCHES)

    def test_the_last_two_jobs_finishing_together_fire_the_callback_once(self) -> None:
        """Two workers finish the batch's last two jobs while two
        dispatchers poll for completion: one callback."""
        with robust_queue.batch(on_finish=tasks.record) as batch:
            tasks.add.enqueue(1, 1)
            tasks.add.enqueue(2, 2)
        first, second = claim()

        def poll() -> int:
            fired = 0
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                fired += Batch.objects.complete_all_in_batches()
                if Batch.objects.filter(completed_at__isnull=False).exists():
                    return fired
            return fired

        results = run_in_threads([lambda: perform(first), lambda: perform(second), poll, poll])
        self.assertEqual(sum(results[2:]), 1)  # type: ignore[arg-type]
        callbacks = Job.objects.filter(task_path=tasks.record.module_path)
        self.assertEqual([job.args for job in callbacks], [[batch.batch_id]])
