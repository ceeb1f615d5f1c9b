"""A real worker whose finalize keeps failing: it retries, and TERM does not
give the job back to ready."""

from __future__ import annotations

import signal
import sqlite3
import tempfile
from functools import partial
from pathlib import Path
from typing import Any
from unittest import skipIf, skipUnless

from django.conf import settings
from django.db import connection, transaction
from django.test import TransactionTestCase

from robust_queue.models import ClaimedExecution, Job, JobState, Process
from testproject import finalize_tasks, tasks
from testproject.models import LedgerEntry
from tests.connections import kill_lock_waiters
from tests.helpers import wait_until

from .support import Supervisor

ONE_THREAD = [{"queues": ["*"], "threads": 1, "polling_interval": 0.05}]
# The worker runs only declared tasks of discovered modules.
FINALIZE_TASKS = ["testproject.finalize_tasks"]


def heartbeat_of(process: Process) -> object:
    return Process.objects.values_list("last_heartbeat_at", flat=True).get(pk=process.pk)


HANDED_OFF = "its retrier takes it on"
BODY_FINISHED = "The body finished ({}); its outcome could not be recorded."


def hand_off(supervisor: Supervisor) -> None:
    """Kill the session of the job thread's finalize (blocked on the
    claim's row lock) until the thread hands it to the worker's retrier."""

    def handed_off() -> bool:
        if HANDED_OFF in supervisor.output():
            return True
        kill_lock_waiters(times=1, timeout=10)
        return False

    wait_until(handed_off, timeout=60)


@skipIf(connection.vendor == "sqlite", "SQLite sessions cannot be killed")
class FinalizeHandOffTests(TransactionTestCase):
    """A finalize that keeps failing goes to the worker's retrier: the job
    thread takes new work, the claim row stays the fence."""

    def body_ended_under_lock(self, enqueue: Any, **config: Any) -> tuple[str, Supervisor]:
        """Start a one-thread worker on the job ``enqueue(go_file)``
        enqueues; return once its body has run. The caller locks the
        claim, then touches the go file (``self.go``)."""
        self.go = Path(tempfile.mkdtemp()) / "go"
        self.addCleanup(self.go.unlink, missing_ok=True)
        result = enqueue(str(self.go))
        config = {"workers": ONE_THREAD, "task_modules": FINALIZE_TASKS, **config}
        supervisor = Supervisor(self, **config)
        supervisor.children("worker")
        wait_until(lambda: LedgerEntry.objects.filter(key="once").exists(), timeout=30)
        return result.id, supervisor

    def lock_claim_of(self, result_id: str) -> None:
        ClaimedExecution.objects.select_for_update().get(job__result_id=result_id)

    def test_a_job_runs_while_another_outcome_waits_to_be_written(self) -> None:
        """The thread whose finalize failed three times runs the next job;
        the outcome is written once the row is free, the body ran once."""
        result_id, supervisor = self.body_ended_under_lock(
            partial(finalize_tasks.record_when_allowed.enqueue, "once")
        )
        later = tasks.add.enqueue(1, 1)
        with transaction.atomic():
            self.lock_claim_of(result_id)
            self.go.touch()
            hand_off(supervisor)
            wait_until(lambda: job_state(later.id) == JobState.FINISHED, timeout=30)
            self.assertEqual(job_state(result_id), JobState.CLAIMED)
        wait_until(lambda: job_state(result_id) == JobState.FINISHED, timeout=30)
        self.assertEqual(Job.objects.get(result_id=result_id).return_value, "once")
        self.assertEqual(LedgerEntry.objects.filter(key="once").count(), 1)
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=30), 0, supervisor.output())

    def test_a_worker_at_max_pending_finalizes_claims_nothing(self) -> None:
        """With max_pending_finalizes outcomes waiting, the free thread
        takes no job until they are written."""
        workers = [{**ONE_THREAD[0], "max_pending_finalizes": 1}]
        result_id, supervisor = self.body_ended_under_lock(
            partial(finalize_tasks.record_when_allowed.enqueue, "once"), workers=workers
        )
        [worker] = supervisor.children("worker")
        later = tasks.add.enqueue(1, 1)
        with transaction.atomic():
            self.lock_claim_of(result_id)
            self.go.touch()
            hand_off(supervisor)
            self.assertIn("it claims no more jobs until they are", supervisor.output())
            # Rounds of the worker's loop (every 0.05 s) pass meanwhile.
            beat = heartbeat_of(worker)
            wait_until(lambda: heartbeat_of(worker) != beat, timeout=30)
            self.assertEqual(job_state(later.id), JobState.READY)
        wait_until(lambda: job_state(later.id) == JobState.FINISHED, timeout=30)
        self.assertEqual(job_state(result_id), JobState.FINISHED)
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=30), 0, supervisor.output())

    def stop_while_pending(self, enqueue: Any) -> Job:
        """TERM while the job's outcome waits in the retrier and its claim
        stays locked past the worker's exit; the lock goes once the worker
        has said the claim stays for the supervisor to fail. Returns the
        job once it ended (a next supervisor prunes what is left)."""
        result_id, supervisor = self.body_ended_under_lock(enqueue)
        with transaction.atomic():
            self.lock_claim_of(result_id)
            self.go.touch()
            hand_off(supervisor)
            supervisor.send(signal.SIGTERM)
            wait_until(lambda: "stay claimed for the supervisor to fail" in supervisor.output())
        self.assertEqual(supervisor.wait(timeout=30), 0, supervisor.output())
        if job_state(result_id) == JobState.CLAIMED:
            # Its exit could not be recorded in time: the row is pruned.
            after = Supervisor(self, workers=ONE_THREAD, task_modules=FINALIZE_TASKS)
            ended = (JobState.FAILED, JobState.FINISHED)
            wait_until(lambda: job_state(result_id) in ended, timeout=60)
            after.send(signal.SIGTERM)
            self.assertEqual(after.wait(timeout=30), 0)
        self.assertEqual(LedgerEntry.objects.filter(key="once").count(), 1)
        return Job.objects.get(result_id=result_id)

    def assert_failed_saying(self, job: Job, did: str) -> None:
        [error] = job.errors
        self.assertIn(
            error["exception_class_path"],
            (
                "robust_queue.exceptions.ProcessExitError",
                "robust_queue.exceptions.ProcessPrunedError",
            ),
        )
        self.assertIn(BODY_FINISHED.format(did), error["traceback"])

    def test_a_stop_records_a_failure_or_says_what_the_body_raised(self) -> None:
        """Never a crash (``ProcessMissingError``): the true failure, or
        an error naming it."""
        job = self.stop_while_pending(partial(finalize_tasks.raise_when_allowed.enqueue, "once"))
        self.assertEqual(job_state(job.result_id), JobState.FAILED)
        [error] = job.errors
        if error["exception_class_path"] != "builtins.ValueError":
            self.assert_failed_saying(job, "it raised ValueError: once")

    def test_a_stop_records_a_success_or_says_what_the_body_returned(self) -> None:
        """A body that succeeded: finished (a session of the dead worker
        may write it once the lock goes), or failed naming its value."""
        job = self.stop_while_pending(partial(finalize_tasks.record_when_allowed.enqueue, "once"))
        if job.finished_at is None:
            self.assert_failed_saying(job, "it returned 'once'")
        else:
            self.assertEqual(job.return_value, "once")


@skipUnless(connection.vendor == "sqlite", "SQLite's database-wide write lock")
class SqliteWriteLockTests(TransactionTestCase):
    """Another connection holds SQLite's one write lock while a body ends.

    The worker's finalize waits 0.1 s per try for the lock, every other
    connection of the supervisor 1 s (not SQLite's 30).
    """

    def hold_write_lock(self) -> sqlite3.Connection:
        holder = sqlite3.connect(
            settings.DATABASES["default"]["NAME"], isolation_level=None, timeout=30
        )
        self.addCleanup(holder.close)
        holder.execute("BEGIN IMMEDIATE")
        return holder

    def finalize_under_lock(
        self, failed: str = "(attempt 1: database is locked)"
    ) -> tuple[str, Supervisor, sqlite3.Connection]:
        """A body that completed while the lock is held, its finalize
        retrying (until the output shows ``failed``); then TERM. Returns
        the job's result id, the supervisor and the lock's holder."""
        go = Path(tempfile.mkdtemp()) / "go"
        self.addCleanup(go.unlink, missing_ok=True)
        result = finalize_tasks.record_when_allowed.enqueue("once", str(go), 100)
        supervisor = Supervisor(
            self,
            workers=ONE_THREAD,
            task_modules=FINALIZE_TASKS,
            env={"ROBUST_QUEUE_SQLITE_TIMEOUT": "1"},
        )
        supervisor.children("worker")
        # Every child registered before the lock: one still booting would
        # crash on it (a child that cannot register exits and is forked
        # again), which is not what this test is about.
        supervisor.children("dispatcher")
        wait_until(lambda: LedgerEntry.objects.filter(key="once").exists(), timeout=30)
        holder = self.hold_write_lock()
        go.touch()
        wait_until(lambda: failed in supervisor.output(), timeout=60)
        supervisor.send(signal.SIGTERM)
        return result.id, supervisor, holder

    def next_supervisor_ends(self, result_id: str) -> Job:
        after = Supervisor(self, workers=ONE_THREAD, task_modules=FINALIZE_TASKS)
        after.children("worker")
        ended = (JobState.FAILED, JobState.FINISHED)
        wait_until(lambda: job_state(result_id) in ended, timeout=60)
        self.assertEqual(LedgerEntry.objects.filter(key="once").count(), 1)
        after.send(signal.SIGTERM)
        self.assertEqual(after.wait(timeout=30), 0)
        return Job.objects.get(result_id=result_id)

    def test_a_body_that_completed_under_the_write_lock_does_not_run_again(self) -> None:
        """The lock outlasts the supervisor: nothing can be written, not
        even the deregistration. The claim stays; the next supervisor
        prunes the worker's row and fails it, saying the outcome was not
        recorded. The body ran once."""
        result_id, supervisor, holder = self.finalize_under_lock()
        supervisor.wait(timeout=90)
        holder.rollback()
        output = supervisor.output()
        self.assertIn("stay claimed for the supervisor to fail", output)
        self.assertNotIn("given back", output)
        self.assertNotIn("Traceback", output)
        self.assertEqual(job_state(result_id), JobState.CLAIMED)
        # Pruned once the next supervisor has reached the database for
        # the alive threshold (10 s).
        [error] = self.next_supervisor_ends(result_id).errors
        self.assertEqual(
            error["exception_class_path"], "robust_queue.exceptions.ProcessPrunedError"
        )
        self.assertIn(
            "stopped heartbeating and was pruned. The job may have run, wholly or "
            "in part, but its outcome was not recorded.",
            error["traceback"],
        )

    def test_a_lock_that_goes_away_during_the_stop_does_not_give_the_job_back(self) -> None:
        """The lock is released as the worker stops, its outcome waiting
        in the retrier: its shutdown gives back only bodies that have not
        run, and retries the write until the shutdown timeout, so the job
        ends finished, or failed by a supervisor saying its outcome was
        not recorded; never ready, never run twice."""
        result_id, supervisor, holder = self.finalize_under_lock(
            failed="(try 4: database is locked)"
        )
        wait_until(lambda: "stopping: running jobs get" in supervisor.output(), timeout=30)
        holder.rollback()
        supervisor.wait(timeout=90)
        self.assertIn(job_state(result_id), (JobState.CLAIMED, JobState.FINISHED))
        job = self.next_supervisor_ends(result_id)
        if job.finished_at is None:
            [error] = job.errors
            self.assertRegex(
                error["traceback"],
                "its outcome could not be recorded|but its outcome was not recorded",
            )
        else:
            self.assertEqual(job.return_value, "once")


def job_state(result_id: str) -> JobState:
    return Job.objects.with_executions().get(result_id=result_id).state
