"""A real worker whose finalize keeps failing: it retries, and TERM does not
give the job back to ready."""

from __future__ import annotations

import signal
import sqlite3
import tempfile
from pathlib import Path
from unittest import skipIf, skipUnless

from django.conf import settings
from django.db import connection, transaction
from django.test import TransactionTestCase

from robust_queue.models import ClaimedExecution, Job, JobState, Process, ReadyExecution
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


@skipIf(connection.vendor == "sqlite", "SQLite sessions cannot be killed")
class FinalizeRetryTests(TransactionTestCase):
    def test_a_finalize_outlasting_killed_connections_keeps_its_claim_at_term(self) -> None:
        """The body runs once: retried while the worker lives, never released."""
        go = Path(tempfile.mkdtemp()) / "go"
        self.addCleanup(go.unlink, missing_ok=True)
        result = finalize_tasks.record_when_allowed.enqueue("once", str(go))
        waiting = tasks.add.enqueue(1, 1)
        supervisor = Supervisor(self, workers=ONE_THREAD, task_modules=FINALIZE_TASKS)
        [worker] = supervisor.children("worker")
        wait_until(lambda: LedgerEntry.objects.filter(key="once").exists(), timeout=30)
        claim_pk = ClaimedExecution.objects.get(job__result_id=result.id).pk
        with transaction.atomic():
            ClaimedExecution.objects.select_for_update().get(pk=claim_pk)
            go.touch()
            # More than the five attempts finalize used to make.
            kill_lock_waiters(times=6)
            # Still retrying: the process heartbeats, its only thread
            # claims nothing new.
            beat = heartbeat_of(worker)
            wait_until(lambda: heartbeat_of(worker) != beat, timeout=30)
            self.assertEqual(job_state(waiting.id), JobState.READY)
            supervisor.send(signal.SIGTERM)
            self.assertEqual(supervisor.wait(timeout=60), 0, supervisor.output())
            self.assertEqual(job_state(result.id), JobState.CLAIMED)
        self.assertIn("stay claimed", supervisor.output())
        self.assertFalse(ReadyExecution.objects.filter(job__result_id=result.id).exists())
        # The next supervisor fails the claim clearly and runs the rest.
        # (PostgreSQL may first finish the dead worker's DELETE, which a
        # backend waiting on a lock does not notice has lost its client.)
        after = Supervisor(self, workers=ONE_THREAD, task_modules=FINALIZE_TASKS)
        ended = (JobState.FAILED, JobState.FINISHED)
        wait_until(lambda: job_state(result.id) in ended, timeout=30)
        wait_until(lambda: job_state(waiting.id) == JobState.FINISHED, timeout=30)
        job = Job.objects.get(result_id=result.id)
        if job.finished_at is None:
            [error] = job.errors
            self.assertEqual(
                error["exception_class_path"], "robust_queue.exceptions.ProcessMissingError"
            )
            self.assertIn(
                "is gone: it is no longer registered and never recorded the job's "
                "outcome. The job may have run",
                error["traceback"],
            )
        self.assertEqual(LedgerEntry.objects.filter(key="once").count(), 1)
        after.send(signal.SIGTERM)
        self.assertEqual(after.wait(timeout=30), 0)


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

    def finalize_under_lock(self, attempt: int = 1) -> tuple[str, Supervisor, sqlite3.Connection]:
        """A body that completed while the lock is held, its finalize
        retrying (until try ``attempt`` has failed); then TERM. Returns
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
        wait_until(
            lambda: f"(attempt {attempt}: database is locked)" in supervisor.output(), timeout=60
        )
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
        """The lock is released while the worker waits for its running
        job: its shutdown gives back only bodies that have not run, so
        the job ends finished (its finalize got through) or failed by the
        next supervisor (the claim outlived the worker); never ready.

        TERM comes after the 8th try, whose back-off is 5 s: the lock goes
        while that thread sleeps, before the worker decides what to give
        back (3 s), so a claim given back would be taken by the release.
        """
        result_id, supervisor, holder = self.finalize_under_lock(attempt=8)
        wait_until(lambda: "waiting for 1 running job(s)" in supervisor.output(), timeout=30)
        holder.rollback()
        supervisor.wait(timeout=90)
        self.assertIn(job_state(result_id), (JobState.CLAIMED, JobState.FINISHED))
        job = self.next_supervisor_ends(result_id)
        if job.finished_at is None:
            [error] = job.errors
            self.assertEqual(
                error["exception_class_path"], "robust_queue.exceptions.ProcessMissingError"
            )
            self.assertIn("is gone: it is no longer registered", error["traceback"])


def job_state(result_id: str) -> JobState:
    return Job.objects.with_executions().get(result_id=result_id).state
