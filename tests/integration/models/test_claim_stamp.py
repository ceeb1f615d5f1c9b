"""A claim's time is taken once the claim holds its rows, so no job starts
before it was enqueued, however long the claim waited for its lock or for
the CPU between taking its time and sending its statement
(``claims_in_doubt.Stamp``)."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from typing import Any

from django.db import connection
from django.test import TransactionTestCase
from django.utils import timezone

from robust_queue.models import Job, NextClaim, ReadyExecution
from testproject import tasks
from tests.helpers import claim, make_process, run_in_threads


class ClaimStampTests(TransactionTestCase):
    def enqueue_before_the_claim_is_sent(self, body: Callable[[], Any]) -> Any:
        """Run ``body`` (a claim); as its first statement is about to be
        sent, another connection enqueues a job and commits. On SQLite the
        claim then waits for that writer's lock; elsewhere the job is
        committed before the claim's snapshot."""
        late: list[str] = []

        def enqueue_first(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
            if not late:
                time.sleep(0.005)  # the clock moves on past any early stamp
                (result,) = run_in_threads([lambda: tasks.add.enqueue(9, 9)])
                late.append(result.id)  # type: ignore[attr-defined]
            return execute(sql, params, many, context)

        with connection.execute_wrapper(enqueue_first):
            outcome = body()
        self.assertEqual(len(late), 1, "the claim sent nothing")
        self.late = Job.objects.get(result_id=late[0])
        return outcome

    def assert_started_after_enqueue(self) -> None:
        self.assertIsNotNone(self.late.started_at, "the claim took the late job")
        self.assertGreaterEqual(self.late.started_at, self.late.enqueued_at)
        self.assertGreaterEqual(self.late.last_attempted_at, self.late.enqueued_at)

    def test_a_claim(self) -> None:
        rows = self.enqueue_before_the_claim_is_sent(lambda: claim(5))
        self.assertEqual([row.job_id for row in rows], [self.late.pk])
        self.assert_started_after_enqueue()
        if connection.vendor != "postgresql":
            # PostgreSQL's claim row keeps the stamp sent with the statement.
            self.assertGreaterEqual(rows[0].created_at, self.late.enqueued_at)

    def test_a_capped_claim(self) -> None:
        def capped() -> Any:
            return ReadyExecution.objects.claim(
                5, process_id=None, worker_id="w", queue_name="default", max_concurrency=3
            )

        tasks.add.enqueue(0, 0)  # the queue is not empty: the cap's lock is taken
        rows = self.enqueue_before_the_claim_is_sent(capped)
        self.assertEqual(len(rows), 2)
        self.assert_started_after_enqueue()

    def test_the_claim_of_a_finish(self) -> None:
        tasks.add.enqueue(1, 1)
        (running,) = claim(1)
        process = make_process()
        then = NextClaim(None, (), None, process.pk, "w")
        finished = self.enqueue_before_the_claim_is_sent(lambda: running.finish(2, then))
        self.assertIs(finished, True)
        self.assertEqual([row.job_id for row in then.claimed], [self.late.pk])
        self.assert_started_after_enqueue()

    def test_a_job_enqueued_by_a_clock_far_ahead_starts_by_this_worker_s_clock(self) -> None:
        """Another host's clock 10 min ahead is not the race above: the
        start stays this worker's (at most 5 s past its stamp), so the
        run time measured from it stays true."""
        result = tasks.add.enqueue(1, 1)
        ahead = timezone.now() + dt.timedelta(minutes=10)
        Job.objects.filter(result_id=result.id).update(enqueued_at=ahead)
        before = timezone.now()
        (row,) = claim(1)
        job = Job.objects.get(result_id=result.id)
        self.assertLessEqual(job.started_at, before + dt.timedelta(seconds=6))
        self.assertLessEqual(job.last_attempted_at, before + dt.timedelta(seconds=6))
        self.assertGreaterEqual(job.started_at, row.created_at)
