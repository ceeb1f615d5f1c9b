"""cancel() racing claimers on real connections: each job ends in exactly
one state, and a claimed one always carries the request."""

from __future__ import annotations

import threading
import time
import unittest

from django.db import connection, transaction
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

    @unittest.skipIf(connection.vendor == "sqlite", "SQLite runs one writer at a time")
    def test_a_claim_committed_while_cancel_looks_for_it_gets_the_request(self) -> None:
        """The window the race above found by chance, made certain: a worker
        holds the ready row (its claim not yet committed) when cancel looks
        at the queue, and commits the claim right after cancel's UPDATE of
        claims found nothing. Cancel must not report "requested" for a
        claim that does not carry the request."""
        result = tasks.add.enqueue(1, 1)
        table = ClaimedExecution._meta.db_table
        claimed, release, committed = threading.Event(), threading.Event(), threading.Event()

        def claim_and_hold() -> int:
            with transaction.atomic():
                rows = claim(1, worker_id="holder")
                claimed.set()
                release.wait(10)
            committed.set()
            return len(rows)

        def commit_after_update(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
            outcome = execute(sql, params, many, context)
            if sql.startswith("UPDATE") and table in sql and not release.is_set():
                release.set()
                committed.wait(10)
            return outcome

        def cancel_it() -> str:
            claimed.wait(10)
            with connection.execute_wrapper(commit_after_update):
                return robust_queue.cancel(result.id).value

        taken, outcome = run_in_threads([claim_and_hold, cancel_it])
        self.assertEqual(taken, 1)
        self.assertTrue(release.is_set(), "cancel never sent its UPDATE of claims")
        self.assertEqual(outcome, "requested")
        self.assertIsNotNone(
            ClaimedExecution.objects.get(job__result_id=result.id).cancel_requested_at
        )
