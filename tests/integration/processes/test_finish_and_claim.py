"""Finish-and-claim-next: a thread that finishes a job claims its next one
with the same commit (one statement on PostgreSQL, one transaction on
MariaDB and SQLite), only if the finish went through, and a stopping
worker starts nothing it claimed that way (real jobs, real database)."""

from __future__ import annotations

import threading
from unittest import mock

from django.db import OperationalError, connection, connections, transaction
from django.test import TransactionTestCase
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from robust_queue.compat import TaskResultStatus
from robust_queue.models import (
    ClaimedExecution,
    Job,
    NextClaim,
    Pause,
    Process,
    ReadyExecution,
    TaskPause,
)
from robust_queue.models.sql import dialect_for
from robust_queue.processes.pool import Pool
from robust_queue.running.finalizing import Finalized, record_success
from testproject import tasks
from tests.connections import kill_lock_waiters
from tests.helpers import claim, wait_until


def next_claim(process: Process, queue_name: str | None = None) -> NextClaim:
    return NextClaim(queue_name, (), (), process.pk, "worker-test")


class FinishAndClaimTests(TransactionTestCase):
    def setUp(self) -> None:
        self.process = Process.objects.create(kind="worker", name="worker-test", pid=1)

    def test_the_finish_claims_the_next_job_in_priority_order(self) -> None:
        first = tasks.add.using(priority=9).enqueue(1, 1)
        low = tasks.add.using(priority=-5).enqueue(2, 2)
        high = tasks.add.using(priority=7).enqueue(3, 3)
        [row] = claim(1)
        self.assertEqual(row.job.result_id, first.id)
        then = next_claim(self.process)
        self.assertIs(row.finish(2, then), True)
        self.assertEqual(tasks.add.get_result(first.id).status, TaskResultStatus.SUCCESSFUL)
        [following] = then.claimed
        self.assertEqual(following.job.result_id, high.id)
        self.assertEqual(following.process_id, self.process.pk)
        self.assertEqual(following.job.worker_ids, ["worker-test"])
        self.assertIsNotNone(following.job.started_at)
        stored = ClaimedExecution.objects.get(pk=following.pk)
        self.assertEqual(stored.job_id, following.job.pk)
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=low.id).exists())
        self.assertEqual(ReadyExecution.objects.count(), 1)

    def test_a_claim_carries_its_process_and_its_time(self) -> None:
        # from_db() maps values in the model's field order: the process id
        # once landed in created_at and the time in process_id.
        tasks.add.enqueue(1, 1)
        before = timezone.now()
        [row] = ReadyExecution.objects.claim(1, process_id=self.process.pk, worker_id="w")
        self.assertEqual(row.process_id, self.process.pk)
        self.assertGreaterEqual(row.created_at, before)
        stored = ClaimedExecution.objects.get(pk=row.pk)
        self.assertEqual((stored.process_id, stored.job_id), (row.process_id, row.job_id))

    def test_a_claim_that_is_gone_finishes_nothing_and_claims_nothing(self) -> None:
        done = tasks.add.enqueue(1, 1)
        waiting = tasks.add.enqueue(2, 2)
        [row] = claim(1)
        ClaimedExecution.objects.filter(pk=row.pk).delete()  # a prune, meanwhile
        then = next_claim(self.process)
        self.assertIs(row.finish(2, then), False)
        self.assertEqual(then.claimed, [])
        self.assertIsNone(Job.objects.get(result_id=done.id).finished_at)
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=waiting.id).exists())

    def test_an_empty_queue_finishes_and_claims_nothing(self) -> None:
        done = tasks.add.enqueue(1, 1)
        other = tasks.add.using(queue_name="mail").enqueue(2, 2)
        [row] = claim(1)
        then = next_claim(self.process, queue_name="default")
        self.assertIs(row.finish(2, then), True)
        self.assertEqual(then.claimed, [])
        self.assertEqual(tasks.add.get_result(done.id).return_value, 2)
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=other.id).exists())

    def test_paused_queues_and_tasks_are_not_claimed(self) -> None:
        tasks.add.enqueue(1, 1)
        tasks.add.using(queue_name="mail").enqueue(2, 2)
        tasks.fail.enqueue("no")
        [row] = claim(1)
        Pause.objects.create(queue_name="mail")
        TaskPause.objects.create(task_path="testproject.tasks.fail")
        then = NextClaim(None, ("mail",), ("testproject.tasks.fail",), self.process.pk, "w")
        self.assertIs(row.finish(2, then), True)
        self.assertEqual(then.claimed, [])
        self.assertEqual(ReadyExecution.objects.count(), 2)

    def test_postgresql_sends_one_statement_for_both_mysql_two_texts(self) -> None:
        if connection.vendor == "sqlite":
            self.skipTest("SQLite has no round trips: one statement per call")
        tasks.add.enqueue(1, 1)
        tasks.add.enqueue(2, 2)
        [row] = claim(1)
        dialect = dialect_for("default")  # made outside the count
        with CaptureQueriesContext(connection) as queries:
            finished, claimed = dialect.finish_and_claim(
                row.pk,
                row.job_id,
                timezone.now(),
                2,
                (1, dialect.claim_filter(None, (), ()), self.process.pk, "w"),
                timezone.now,
            )
        self.assertIs(finished, True)
        self.assertEqual(len(claimed.rows), 1)
        # MySQL/MariaDB: the finish and the lock of the next job, then the
        # rest of the claim and the COMMIT (it was nine round trips).
        self.assertEqual(len(queries), 1 if connection.vendor == "postgresql" else 2)

    def test_a_failing_claim_never_turns_a_success_into_a_failure(self) -> None:
        done = tasks.add.enqueue(1, 1)
        tasks.add.enqueue(2, 2)
        [row] = claim(1)
        dialect = type(dialect_for("default"))
        refuse = mock.patch.object(
            dialect, "finish_and_claim", side_effect=OperationalError("lost in the claim")
        )
        then = next_claim(self.process)
        with refuse:
            self.assertIs(record_success(row, 2, then), Finalized.RECORDED)
        self.assertEqual(then.claimed, [])
        self.assertEqual(tasks.add.get_result(done.id).return_value, 2)
        self.assertEqual(ReadyExecution.objects.count(), 1)


class KilledMidStatementTests(TransactionTestCase):
    def test_a_finish_and_claim_killed_mid_statement_finishes_alone(self) -> None:
        """The combined statement waits on a lock and its session is
        killed: nothing of it stays (the next job is still ready), and the
        success is recorded by the plain finish on a new connection."""
        if connection.vendor == "sqlite":
            self.skipTest("SQLite has no sessions to kill")
        process = Process.objects.create(kind="worker", name="worker-test", pid=1)
        done = tasks.add.enqueue(1, 1)
        waiting = tasks.add.enqueue(2, 2)
        [row] = claim(1)
        then = next_claim(process)
        outcome: list[Finalized] = []

        def finish() -> None:
            try:
                outcome.append(record_success(row, 2, then))
            finally:
                connections.close_all()

        worker = threading.Thread(target=finish)
        with transaction.atomic():
            ClaimedExecution.objects.select_for_update().get(pk=row.pk)
            worker.start()
            kill_lock_waiters(1)
        worker.join(60)
        self.assertFalse(worker.is_alive())
        self.assertEqual(outcome, [Finalized.RECORDED])
        self.assertEqual(then.claimed, [])
        self.assertEqual(tasks.add.get_result(done.id).return_value, 2)
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=waiting.id).exists())
        self.assertFalse(ClaimedExecution.objects.exists())


def pool_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("rq-pool-")]


class PoolClaimsNextTests(TransactionTestCase):
    def setUp(self) -> None:
        self.process = Process.objects.create(kind="worker", name="worker-test", pid=1)
        self.woken: list[int] = []
        self.claiming = True

    def pool(self, size: int) -> Pool:
        pool = Pool(
            size,
            using="default",
            on_idle=lambda: self.woken.append(1),
            next_claim=lambda: next_claim(self.process),
            keeps_claiming=lambda: self.claiming,
        )

        def close() -> None:
            pool.close()
            wait_until(lambda: not pool_threads(), timeout=30)

        self.addCleanup(close)
        return pool

    def test_one_posted_job_drains_the_queue_through_its_thread(self) -> None:
        """Posted once, the thread claims every next job itself, and wakes
        the worker's loop only when the queue is empty."""
        results = [tasks.add.enqueue(i, i) for i in range(6)]
        pool = self.pool(1)
        [row] = claim(1)
        pool.post(row)
        wait_until(lambda: not ReadyExecution.objects.exists() and pool.idle == 1, timeout=30)
        self.assertIs(pool.drain(30), True)
        for i, result in enumerate(results):
            fetched = tasks.add.get_result(result.id)
            self.assertEqual(
                (fetched.status, fetched.return_value), (TaskResultStatus.SUCCESSFUL, 2 * i)
            )
        self.assertEqual(len(self.woken), 1)
        self.assertFalse(ClaimedExecution.objects.exists())
        # Each job ran once, by this worker.
        self.assertEqual(
            sorted(len(ids) for ids in Job.objects.values_list("worker_ids", flat=True)),
            [1] * 6,
        )

    def test_a_failed_job_claims_nothing_with_its_failure(self) -> None:
        failing = tasks.fail.enqueue("no")
        waiting = tasks.add.enqueue(1, 1)
        pool = self.pool(1)
        [row] = claim(1)
        self.assertEqual(row.job.result_id, failing.id)
        pool.post(row)
        self.assertIs(pool.drain(30), True)
        self.assertEqual(tasks.fail.get_result(failing.id).status, TaskResultStatus.FAILED)
        self.assertEqual(len(self.woken), 1)
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=waiting.id).exists())

    def test_a_job_claimed_as_the_worker_stops_is_given_back_not_run(self) -> None:
        """keeps_claiming() turns false while the finish claims: the job it
        claimed goes back to ready, its body never started."""
        first = tasks.add.enqueue(1, 1)
        second = tasks.add.enqueue(2, 2)
        pool = Pool(
            1,
            using="default",
            on_idle=lambda: self.woken.append(1),
            next_claim=self._stop_after_asking,
            keeps_claiming=lambda: self.claiming,
        )
        self.addCleanup(lambda: (pool.close(), wait_until(lambda: not pool_threads())))
        [row] = claim(1)
        pool.post(row)
        self.assertIs(pool.drain(30), True)
        self.assertEqual(tasks.add.get_result(first.id).return_value, 2)
        job = Job.objects.get(result_id=second.id)
        self.assertTrue(ReadyExecution.objects.filter(job=job).exists())
        self.assertFalse(ClaimedExecution.objects.exists())
        self.assertIsNone(job.finished_at)
        self.assertEqual(len(self.woken), 1)

    def _stop_after_asking(self) -> NextClaim:
        self.claiming = False  # The worker stops while the finish runs.
        return next_claim(self.process)

    def test_claims_made_after_shutdown_gave_claims_back_are_given_back(self) -> None:
        tasks.sleep_for.enqueue(0.3)
        waiting = tasks.add.enqueue(1, 1)
        pool = self.pool(1)
        [row] = claim(1)
        pool.post(row)
        # Shutdown gives back what has not run (nothing is kept: the body
        # still runs), then the body ends and its finish claims the next.
        released, kept = pool.give_back_unfinished(lambda kept: 0)
        self.assertEqual((released, kept), (0, set()))
        self.assertIs(pool.drain(30), True)
        job = Job.objects.get(result_id=waiting.id)
        self.assertIsNone(job.finished_at)
        self.assertTrue(ReadyExecution.objects.filter(job=job).exists())
