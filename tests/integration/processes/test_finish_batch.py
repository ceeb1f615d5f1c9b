"""Several successes written with one commit (``ClaimedExecution.finish_all``,
a worker's Finisher): each finish fenced by its own claim, the next jobs
claimed with it, and a failing batch written one by one (real database)."""

from __future__ import annotations

from typing import Any
from unittest import mock, skipUnless

from django.db import OperationalError, connection, transaction
from django.test import TransactionTestCase
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from robust_queue.compat import TaskResultStatus
from robust_queue.models import (
    BlockedExecution,
    ClaimedExecution,
    Job,
    NextClaim,
    Pause,
    Process,
    ReadyExecution,
    TaskPause,
)
from robust_queue.models.sql.finish_probe import FINISHED_CHANNEL
from robust_queue.models.sql.listen_target import listen_route
from robust_queue.processes.finisher import Finisher
from robust_queue.processes.pool import Pool
from testproject import control_tasks, tasks
from tests.connections import kill_lock_waiters
from tests.helpers import claim, wait_until


def next_claim(process: Process, limit: int) -> NextClaim:
    return NextClaim(None, (), (), process.pk, "worker-test", limit=limit)


class FinishAllTests(TransactionTestCase):
    def setUp(self) -> None:
        self.process = Process.objects.create(kind="worker", name="worker-test", pid=1)

    def test_each_job_gets_its_own_value_in_one_commit(self) -> None:
        results = [tasks.add.enqueue(n, n) for n in range(3)]
        rows = claim(3)
        values = [{"n": 1}, None, [1, "two"]]
        before = timezone.now()
        finished = ClaimedExecution.finish_all(list(zip(rows, values, strict=True)))
        self.assertEqual(finished, [True, True, True])
        self.assertFalse(ClaimedExecution.objects.exists())
        by_id = {row.job.result_id: value for row, value in zip(rows, values, strict=True)}
        for result in results:
            job = Job.objects.get(result_id=result.id)
            self.assertEqual(job.return_value, by_id[result.id])
            self.assertGreaterEqual(job.finished_at, before)
            self.assertEqual(tasks.add.get_result(result.id).status, TaskResultStatus.SUCCESSFUL)

    def test_a_claim_that_is_gone_is_not_finished_and_the_others_are(self) -> None:
        results = [tasks.add.enqueue(n, n) for n in range(3)]
        rows = claim(3)
        ClaimedExecution.objects.filter(pk=rows[1].pk).delete()  # a prune, meanwhile
        finished = ClaimedExecution.finish_all([(row, 7) for row in rows])
        self.assertEqual(finished, [True, False, True])
        gone = Job.objects.get(pk=rows[1].job_id)
        self.assertIsNone(gone.finished_at)
        self.assertIsNone(gone.return_value)
        done = {r.id for r in results} - {gone.result_id}
        self.assertEqual(
            set(Job.objects.filter(finished_at__isnull=False).values_list("result_id", flat=True)),
            done,
        )

    def test_the_next_jobs_are_claimed_with_the_finishes_in_priority_order(self) -> None:
        for n in range(2):
            tasks.add.enqueue(n, n)
        rows = claim(2)
        low = tasks.add.using(priority=-3).enqueue(9, 9)
        high = [tasks.add.using(priority=5).enqueue(n, n) for n in range(2)]
        then = next_claim(self.process, limit=2)
        self.assertEqual(ClaimedExecution.finish_all([(row, 1) for row in rows], then), [True] * 2)
        self.assertEqual([c.job.result_id for c in then.claimed], [r.id for r in high])
        for following in then.claimed:
            self.assertEqual(following.process_id, self.process.pk)
            self.assertEqual(following.job.worker_ids, ["worker-test"])
            self.assertTrue(ClaimedExecution.objects.filter(pk=following.pk).exists())
        self.assertEqual(
            list(ReadyExecution.objects.values_list("job__result_id", flat=True)), [low.id]
        )

    def test_nothing_is_claimed_when_no_claim_was_still_there(self) -> None:
        tasks.add.enqueue(1, 1)
        [row] = claim(1)
        waiting = tasks.add.enqueue(2, 2)
        ClaimedExecution.objects.filter(pk=row.pk).delete()
        then = next_claim(self.process, limit=3)
        self.assertEqual(ClaimedExecution.finish_all([(row, 1)], then), [False])
        self.assertEqual(then.claimed, [])
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=waiting.id).exists())

    def test_paused_queues_and_tasks_are_not_claimed_with_a_batch(self) -> None:
        for n in range(2):
            tasks.add.enqueue(n, n)
        rows = claim(2)
        tasks.add.using(queue_name="mail").enqueue(2, 2)
        tasks.fail.enqueue("no")
        Pause.objects.create(queue_name="mail")
        TaskPause.objects.create(task_path="testproject.tasks.fail")
        then = NextClaim(
            None, ("mail",), ("testproject.tasks.fail",), self.process.pk, "w", limit=2
        )
        self.assertEqual(ClaimedExecution.finish_all([(row, 1) for row in rows], then), [True] * 2)
        self.assertEqual(then.claimed, [])
        self.assertEqual(ReadyExecution.objects.count(), 2)

    def test_a_finish_frees_its_concurrency_slot_for_a_blocked_job(self) -> None:
        first = control_tasks.limited.enqueue("acct", "a")
        second = control_tasks.limited.enqueue("acct", "b")
        third = control_tasks.limited.enqueue("acct", "c")  # over the limit of 2
        self.assertTrue(BlockedExecution.objects.filter(job__result_id=third.id).exists())
        rows = claim(2)
        self.assertEqual({r.job.result_id for r in rows}, {first.id, second.id})
        ClaimedExecution.finish_all([(rows[0], "a")])
        self.assertFalse(BlockedExecution.objects.exists())
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=third.id).exists())

    def test_postgresql_writes_a_batch_and_its_claims_in_one_statement(self) -> None:
        if connection.vendor != "postgresql":
            self.skipTest("one statement on PostgreSQL; a transaction elsewhere")
        for n in range(6):
            tasks.add.enqueue(n, n)
        rows = claim(3)
        then = next_claim(self.process, limit=3)
        with CaptureQueriesContext(connection) as queries:
            ClaimedExecution.finish_all([(row, 1) for row in rows], then)
        self.assertEqual(len(then.claimed), 3)
        # Statistics aside: a worker keeps them in memory (recorder).
        sent = [q["sql"][:80] for q in queries if "robust_queue_statistic" not in q["sql"]]
        self.assertEqual(len(sent), 1, sent)


@skipUnless(connection.vendor == "postgresql", "NOTIFY is PostgreSQL's")
class FinishAllNotifyTests(TransactionTestCase):
    """A waiter of an awaited job hears its finish, written in a batch."""

    def test_awaited_jobs_finished_together_are_announced(self) -> None:
        import psycopg  # only where PostgreSQL runs

        process = Process.objects.create(kind="worker", name="worker-test", pid=1)
        for then in (None, next_claim(process, limit=1)):
            with self.subTest(claims=then is not None):
                results = [tasks.add.enqueue(n, n) for n in range(2)]
                rows = claim(2)
                Job.objects.filter(result_id__in=[r.id for r in results]).update(awaited=True)
                params = listen_route("default").params
                assert params is not None
                with psycopg.connect(**params, autocommit=True) as listener:
                    listener.execute(f"LISTEN {FINISHED_CHANNEL}")
                    ClaimedExecution.finish_all([(row, 1) for row in rows], then)
                    heard = {n.payload for n in listener.notifies(timeout=5, stop_after=2)}
                self.assertEqual(heard, {r.id for r in results})


class FinisherTests(TransactionTestCase):
    """A pool whose successes go to a Finisher: real threads, real jobs."""

    def setUp(self) -> None:
        self.process = Process.objects.create(kind="worker", name="worker-test", pid=1)
        self.idle = 0

    def _pool(self, then: bool | None = True, window: float = 0.05) -> Pool:
        """``then``: claim with each write; False: not; None: raise."""

        def next_claims(n: int) -> NextClaim | None:
            if then is None:
                raise RuntimeError("no plan")
            return next_claim(self.process, n) if then else None

        pool = Pool(3, using="default", on_idle=self._on_idle)
        finisher = Finisher(3, window, using="default", next_claim=next_claims, pool=pool)
        pool.hand_off = finisher.write
        self.addCleanup(pool.close)
        self.addCleanup(finisher.stop, 5)
        return pool

    def _on_idle(self) -> None:
        self.idle += 1

    def _finished(self) -> int:
        return Job.objects.filter(finished_at__isnull=False).count()

    def test_every_job_finishes_once_and_the_finisher_claims_the_rest(self) -> None:
        results = [tasks.add.enqueue(n, n) for n in range(12)]
        pool = self._pool()
        sizes: list[int] = []
        finish_all = ClaimedExecution.finish_all

        def spy(outcomes: list[Any], then: NextClaim | None = None) -> list[bool]:
            sizes.append(len(outcomes))
            return finish_all(outcomes, then)

        with mock.patch.object(ClaimedExecution, "finish_all", spy):
            for row in claim(3, process=self.process):
                pool.post(row)
            wait_until(lambda: self._finished() == 12, timeout=30)
            wait_until(lambda: pool.idle == 3, timeout=10)
        # Written together, and the threads ran what was claimed for them.
        self.assertEqual(sum(sizes), 12)
        self.assertLess(len(sizes), 12)
        for n, result in enumerate(results):
            stored = tasks.add.get_result(result.id)
            self.assertEqual(
                (stored.status, stored.return_value), (TaskResultStatus.SUCCESSFUL, 2 * n)
            )
            self.assertEqual(stored.attempts, 1)
        self.assertFalse(ClaimedExecution.objects.exists())

    def test_without_a_claim_to_make_the_threads_go_idle(self) -> None:
        for n in range(3):
            tasks.add.enqueue(n, n)
        waiting = tasks.add.enqueue(5, 5)
        pool = self._pool(then=False)
        for row in claim(3, process=self.process):
            pool.post(row)
        wait_until(lambda: self._finished() == 3 and pool.idle == 3, timeout=30)
        self.assertGreaterEqual(self.idle, 1)
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=waiting.id).exists())

    def test_a_long_running_job_is_not_waited_for(self) -> None:
        """With a window of 0.3 s, 30 short jobs beside one of 3 s finish
        long before it: its thread would not hand anything on soon."""
        long = tasks.sleep_for.enqueue(3)
        [row] = claim(1, process=self.process)
        pool = self._pool(window=0.3)
        pool.post(row)
        for n in range(30):
            tasks.add.enqueue(n, n)
        for row in claim(2, process=self.process):
            pool.post(row)
        # Waited for, each would take a window: 30 x 0.3 s over 2 threads.
        wait_until(lambda: self._finished() == 30, timeout=2.5)
        self.assertIsNone(Job.objects.get(result_id=long.id).finished_at)
        wait_until(lambda: self._finished() == 31, timeout=10)

    def test_a_finisher_that_raises_leaves_each_write_to_its_thread(self) -> None:
        results = [tasks.add.enqueue(n, n) for n in range(6)]
        pool = self._pool(then=None)
        with self.assertLogs("robust_queue.processes.finisher", "ERROR") as logs:
            for row in claim(3, process=self.process):
                pool.post(row)
            wait_until(lambda: self._finished() == 3 and pool.idle == 3, timeout=30)
            # It goes on: the next ones are written too.
            for row in claim(3, process=self.process):
                pool.post(row)
            wait_until(lambda: self._finished() == 6 and pool.idle == 3, timeout=30)
        self.assertIn("RuntimeError: no plan", "\n".join(logs.output))
        for n, result in enumerate(results):
            self.assertEqual(tasks.add.get_result(result.id).return_value, 2 * n)

    def test_a_batch_whose_session_is_killed_is_written_one_by_one(self) -> None:
        """The batch waits on a lock and its session is killed: nothing of
        it stays (the next jobs are still ready) and each thread writes
        its own success once the lock goes."""
        if connection.vendor == "sqlite":
            self.skipTest("SQLite has no sessions to kill")
        results = [tasks.add.enqueue(n, n) for n in range(3)]
        rows = claim(3, process=self.process)
        waiting = [tasks.add.enqueue(n, n) for n in range(3)]
        pool = self._pool()
        with transaction.atomic():
            ClaimedExecution.objects.select_for_update().get(pk=rows[0].pk)
            for row in rows:
                pool.post(row)
            kill_lock_waiters(1)
        wait_until(lambda: self._finished() == 3 and pool.idle == 3, timeout=30)
        for n, result in enumerate(results):
            stored = tasks.add.get_result(result.id)
            self.assertEqual((stored.return_value, stored.attempts), (2 * n, 1))
        self.assertEqual(
            ReadyExecution.objects.filter(job__result_id__in=[w.id for w in waiting]).count(), 3
        )
        self.assertFalse(ClaimedExecution.objects.exists())

    def test_a_batch_that_fails_is_written_one_by_one(self) -> None:
        results = [tasks.add.enqueue(n, n) for n in range(3)]
        pool = self._pool(then=False)
        failing = mock.patch.object(
            ClaimedExecution, "finish_all", side_effect=OperationalError("lost")
        )
        with failing as finish_all:
            for row in claim(3, process=self.process):
                pool.post(row)
            wait_until(lambda: self._finished() == 3 and pool.idle == 3, timeout=30)
        self.assertGreaterEqual(finish_all.call_count, 1)
        for n, result in enumerate(results):
            self.assertEqual(tasks.add.get_result(result.id).return_value, 2 * n)


class ReleaseUnstartedTests(TransactionTestCase):
    def test_a_claim_given_back_unstarted_is_not_an_attempt(self) -> None:
        result = tasks.add.enqueue(1, 2)
        [first] = claim(1, worker_id="w-1")
        self.assertIs(first.release(), True)  # it ran (a shutdown past its timeout)
        [second] = claim(1, worker_id="w-2")
        self.assertIs(second.release(started=False), True)  # claimed as the worker stopped
        job = Job.objects.get(result_id=result.id)
        self.assertEqual(job.worker_ids, ["w-1"])
        self.assertTrue(ReadyExecution.objects.filter(job=job).exists())
        self.assertEqual(tasks.add.get_result(result.id).attempts, 1)
