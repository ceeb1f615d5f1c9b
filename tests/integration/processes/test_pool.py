"""The worker's thread pool: idle accounting, draining, claims whose
outcome could not be written (real jobs on the real database)."""

from __future__ import annotations

import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from django.db import connection, transaction
from django.test import TransactionTestCase

from robust_queue.compat import TaskResultStatus, task_finished
from robust_queue.models import ClaimedExecution
from robust_queue.processes.pool import Pool
from testproject import finalize_tasks, tasks
from testproject.models import LedgerEntry
from tests.helpers import claim, wait_until


def _stack(frame: FrameType | None) -> Iterator[FrameType]:
    while frame is not None:
        yield frame
        frame = frame.f_back


def pool_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("rq-pool-")]


class PoolTests(TransactionTestCase):
    def setUp(self) -> None:
        self.woken: list[int] = []
        self.pool = Pool(2, using="default", on_idle=lambda: self.woken.append(1))
        self.addCleanup(self.close)

    def close(self) -> None:
        self.pool.close()
        wait_until(lambda: not pool_threads(), timeout=30)

    def test_posted_jobs_run_and_each_frees_its_thread(self) -> None:
        """Every job finishes; each free thread wakes the worker's loop."""
        results = [tasks.add.enqueue(i, i) for i in range(5)]
        for row in claim(5):
            self.pool.post(row)
        self.assertIs(self.pool.drain(30), True)
        self.assertEqual(self.pool.idle, 2)
        self.assertEqual(len(self.woken), 5)
        for i, result in enumerate(results):
            fetched = tasks.add.get_result(result.id)
            self.assertEqual(fetched.status, TaskResultStatus.SUCCESSFUL)
            self.assertEqual(fetched.return_value, 2 * i)
        self.assertEqual(self.pool.finalizing(), set())

    def test_a_running_job_holds_a_thread_until_it_ends(self) -> None:
        """drain() reports whether everything ended within its timeout."""
        tasks.sleep_for.enqueue(1)
        [row] = claim()
        self.pool.post(row)
        self.assertEqual(self.pool.idle, 1)
        self.assertIs(self.pool.drain(0.05), False)
        self.assertIs(self.pool.drain(30), True)
        self.assertEqual(self.pool.idle, 2)

    def test_a_task_finished_receiver_that_raises_is_logged_as_such(self) -> None:
        """The outcome is recorded before task_finished: a receiver's error
        is reported as the receiver's, the other receivers still run, and
        nothing of the claim is kept for the supervisor to fail."""
        heard: list[object] = []

        def refuse(**kwargs: object) -> None:
            raise RuntimeError("a receiver failed")

        def listen(**kwargs: object) -> None:
            heard.append(kwargs["task_result"])

        for receiver in (refuse, listen):
            task_finished.connect(receiver)
            self.addCleanup(task_finished.disconnect, receiver)
        result = tasks.add.enqueue(1, 2)
        [row] = claim()
        with self.assertLogs("robust_queue", "ERROR") as logs:
            self.pool.post(row)
            self.assertIs(self.pool.drain(30), True)
        [line] = logs.output
        self.assertIn("ERROR:robust_queue.running.performing:A task_finished receiver", line)
        self.assertIn(f"refuse) raised for job {result.id}; its outcome is recorded", line)
        self.assertEqual(len(heard), 1)
        self.assertEqual(self.pool.finalizing(), set())
        self.assertEqual(self.pool.idle, 2)
        self.assertEqual(tasks.add.get_result(result.id).status, TaskResultStatus.SUCCESSFUL)

    def test_a_claim_is_kept_while_its_outcome_waits_and_let_go_once_written(self) -> None:
        """While the finalize waits for a lock the claim is marked (a
        shutdown would not give it back); once written, it is not."""
        go = Path(tempfile.mkdtemp()) / "go"
        self.addCleanup(go.unlink, missing_ok=True)
        sqlite = connection.vendor == "sqlite"
        result = finalize_tasks.record_when_allowed.enqueue("once", str(go), 50 if sqlite else 0)
        [row] = claim()
        self.pool.post(row)
        wait_until(LedgerEntry.objects.exists, timeout=30)
        with transaction.atomic():
            if sqlite:  # an IMMEDIATE transaction: the write lock
                LedgerEntry.objects.create(key="lock")
            else:
                ClaimedExecution.objects.select_for_update().get(pk=row.pk)
            go.touch()
            wait_until(lambda: self.pool.finalizing() == {row.pk}, timeout=30)
            self.assertIs(self.pool.drain(0.5), False)
            self.assertEqual(self.pool.finalizing(), {row.pk})
        self.assertIs(self.pool.drain(60), True)
        self.assertEqual(self.pool.finalizing(), set())
        fetched = finalize_tasks.record_when_allowed.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.SUCCESSFUL)

    def test_a_body_ending_while_claims_are_given_back_is_one_decision(self) -> None:
        """Giving claims back at shutdown and a body ending are one decision:
        a body that ends while the claims are given back waits until it is
        done, its claim was not kept (it was still running), and the pool
        says the job runs again, instead of racing its finish against the
        release."""
        go = Path(tempfile.mkdtemp()) / "go"
        result = finalize_tasks.record_when_allowed.enqueue("ran", str(go))
        [row] = claim()
        self.pool.post(row)
        wait_until(LedgerEntry.objects.exists, timeout=30)
        decided: list[set[int]] = []

        def give_back(kept: set[int]) -> int:
            decided.append(kept)
            go.touch()  # the body ends now, while the decision is held
            wait_until(lambda: not self.body_is_waiting(), timeout=30)
            return ClaimedExecution.objects.exclude(pk__in=kept).release_all()

        with self.assertLogs("robust_queue.processes.pool", "WARNING") as logs:
            released, kept = self.pool.give_back_unfinished(give_back)
            self.assertIs(self.pool.drain(30), True)
        self.assertEqual((released, kept, decided), (1, set(), [set()]))
        self.assertIn(
            f"Claim {row.pk}: the body ended after its job was given back", logs.output[0]
        )
        fetched = finalize_tasks.record_when_allowed.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.READY)
        self.assertFalse(ClaimedExecution.objects.exists())
        self.assertEqual(self.pool.finalizing(), set())

    def body_is_waiting(self) -> bool:
        """Whether a pool thread is still inside record_when_allowed's wait."""
        frames = sys._current_frames()
        tops = [frames.get(thread.ident or 0) for thread in pool_threads()]
        return any(
            frame.f_code.co_name == "record_when_allowed" for top in tops for frame in _stack(top)
        )

    def test_close_ends_every_thread_after_its_job(self) -> None:
        tasks.sleep_for.enqueue(0.3)
        [row] = claim()
        self.pool.post(row)
        self.pool.close()
        wait_until(lambda: not pool_threads(), timeout=30)
        self.assertFalse(ClaimedExecution.objects.exists())
