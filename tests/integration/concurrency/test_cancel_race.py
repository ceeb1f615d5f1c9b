"""cancel() racing claimers on real connections: each job ends in exactly
one state, and a claimed one always carries the request."""

from __future__ import annotations

import threading
import time

from django.test import TransactionTestCase

import robust_queue
from robust_queue.models import ClaimedExecution, FailedExecution, Job, ReadyExecution
from testproject import tasks
from tests.helpers import claim, run_in_threads

JOBS = 120


class CancelRaceTests(TransactionTestCase):
    def test_cancelling_while_workers_claim_loses_and_doubles_nothing(self) -> None:
        results = robust_queue.enqueue_all([(tasks.add, (i, i), {}) for i in range(JOBS)])
        barrier = threading.Barrier(3)

        def claim_until_empty() -> int:
            barrier.wait()
            taken = 0
            while batch := claim(1, worker_id=threading.current_thread().name):
                taken += len(batch)
                time.sleep(0.005)
            return taken

        def cancel_all() -> dict[str, int]:
            barrier.wait()
            outcomes: dict[str, int] = {}
            # From the other end: the claimers start with the oldest jobs,
            # so both meet on the same rows half way.
            for result in reversed(results):
                outcome = robust_queue.cancel(result.id).value
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
            return outcomes

        claimed_a, claimed_b, outcomes = run_in_threads(
            [claim_until_empty, claim_until_empty, cancel_all]
        )
        self.assertEqual(sum(outcomes.values()), JOBS)  # type: ignore[union-attr]
        claims = ClaimedExecution.objects.all()
        failed = FailedExecution.objects.all()
        self.assertEqual(claims.count() + failed.count(), JOBS)
        self.assertEqual(claims.count(), claimed_a + claimed_b)  # type: ignore[operator]
        self.assertEqual(claims.filter(cancel_requested_at__isnull=True).count(), 0)
        self.assertEqual(claims.count(), outcomes.get("requested", 0))  # type: ignore[union-attr]
        self.assertFalse(ReadyExecution.objects.exists())
        self.assertFalse(claims.filter(job__failed_execution__isnull=False).exists())
        self.assertEqual(Job.objects.count(), JOBS)
        # The race happened: some jobs were cancelled while waiting.
        self.assertGreater(outcomes.get("cancelled", 0), 0)  # type: ignore[union-attr]
