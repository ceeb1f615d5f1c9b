"""A transition that loses a real deadlock is run again, logged in one line.

Each test builds a real lock cycle: this test's connection, already heavier
with inserted rows (so InnoDB rolls the other side back), holds a job row;
the transition under test locks the job's execution row and waits on the
job; then this connection asks for that execution row. The database kills
the transition (PostgreSQL: the waiter whose deadlock check fires first,
the transition), which must retry, log one line and leave nothing
half-done. SQLite has no row locks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import DatabaseError, connection, connections, transaction
from django.test import TransactionTestCase

from robust_queue.models import FailedExecution, Job, Pause, ReadyExecution
from robust_queue.models.retention import Retention
from robust_queue.models.sql import dialect_for
from robust_queue.models.sql.deadlocks import retry_on_lock_conflict
from robust_queue.operations import bulk as operations
from robust_queue.processes.config import WorkerConfig
from robust_queue.processes.worker import Worker
from testproject import tasks
from tests.helpers import make_process, work_off


def _waiting_on_a_lock() -> bool:
    """Whether a session of this test database waits on a row lock.

    Asked on a connection of its own: PostgreSQL shows one snapshot of
    its statistics per transaction.
    """
    answer: list[bool] = []

    def ask() -> None:
        try:
            with connections["default"].cursor() as cursor:
                cursor.execute(_LOCK_WAITS[connection.vendor])
                answer.append(bool(cursor.fetchone()[0]))
        finally:
            connections.close_all()

    thread = threading.Thread(target=ask)
    thread.start()
    thread.join()
    return answer == [True]


_LOCK_WAITS = {
    "postgresql": "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
    " AND wait_event_type = 'Lock'",
    # MariaDB's INNODB_TRX does not reliably list them: a statement of
    # this database running for 0.3 s here waits on a lock.
    "mysql": "SELECT count(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE()"
    " AND COMMAND = 'Query' AND TIME_MS > 300 AND ID <> CONNECTION_ID()",
}


class DeadlockTests(TransactionTestCase):
    def setUp(self) -> None:
        if connection.vendor == "sqlite":
            self.skipTest("SQLite has no row locks")

    def _lose_deadlock(self, job: Job, execution: Any, operation: Callable[[], Any]) -> Any:
        """Run ``operation`` in a thread and make it lose a deadlock."""
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                outcome["value"] = operation()
            except BaseException as exc:  # noqa: BLE001 - asserted below
                outcome["error"] = exc
            finally:
                connections.close_all()

        thread = threading.Thread(target=run)
        with transaction.atomic():
            if connection.vendor == "postgresql":
                # PostgreSQL aborts whichever waiter checks first: give the
                # operation's check (default 1 s) the lead even on a busy
                # machine. InnoDB picks the lighter transaction instead.
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL deadlock_timeout = '10s'")
            Pause.objects.bulk_create([Pause(queue_name=f"weight-{i}") for i in range(50)])
            list(Job.objects.select_for_update().filter(pk=job.pk))
            thread.start()
            deadline = time.monotonic() + 30
            while not _waiting_on_a_lock():
                self.assertLess(time.monotonic(), deadline, "the operation never waited")
                time.sleep(0.01)
            list(type(execution).objects.select_for_update().filter(pk=execution.pk))
        thread.join(60)
        # The weights are pauses: a claim that sees pauses its worker has
        # not read yet claims nothing that round (the pause is in force
        # when it returns). The operation is over; they go.
        Pause.objects.filter(queue_name__startswith="weight-").delete()
        self.assertNotIn("error", outcome)
        return outcome["value"]

    def test_a_claim_that_loses_a_deadlock_logs_one_line_and_goes_on(self) -> None:
        """The claim is run again at once; no traceback, no stall, and the
        job is claimed once (by the retry, or by the next round when the
        winner still held its ready row)."""
        result = tasks.add.enqueue(1, 2)
        job = Job.objects.get(result_id=result.id)
        worker = Worker(WorkerConfig(), shutdown_timeout=1, using="default", heartbeat_interval=60)
        worker.process = make_process()
        with self.assertLogs("robust_queue.models.sql.deadlocks", "WARNING") as logs:
            claimed = self._lose_deadlock(job, job.ready_execution, lambda: worker._claim(1))
        self.assertIn("claim: deadlock", logs.output[0])
        self.assertIn("retrying in", logs.output[0])
        self.assertNotIn("Traceback", "\n".join(logs.output))
        claimed += worker._claim(1)
        self.assertEqual([row.job_id for row in claimed], [job.pk])

    def test_a_discard_that_loses_a_deadlock_is_retried(self) -> None:
        """The caller of bulk discard gets no error; nothing is half-done."""
        job = Job.objects.get(result_id=tasks.add.enqueue(1, 2).id)
        with self.assertLogs("robust_queue.models.sql.deadlocks", "WARNING") as logs:
            first = self._lose_deadlock(
                job, job.ready_execution, lambda: operations.discard(Job.objects.all())
            )
        self.assertIn("Discard: deadlock", logs.output[0])
        if not first.changed:
            # The retry found the ready row held by the winner: intact.
            self.assertTrue(ReadyExecution.objects.filter(job=job).exists())
            self.assertEqual(operations.discard(Job.objects.all()).changed, 1)
        self.assertFalse(Job.objects.exists())
        self.assertFalse(ReadyExecution.objects.exists())

    def test_a_retry_that_loses_a_deadlock_is_retried(self) -> None:
        job = Job.objects.get(result_id=tasks.fail.enqueue("x").id)
        work_off()
        failed = FailedExecution.objects.get(job=job)
        with self.assertLogs("robust_queue.models.sql.deadlocks", "WARNING") as logs:
            first = self._lose_deadlock(job, failed, lambda: operations.retry(Job.objects.all()))
        self.assertIn("Admin retry: deadlock", logs.output[0])
        if not first.changed:
            self.assertEqual(operations.retry(Job.objects.all()).changed, 1)
        self.assertTrue(ReadyExecution.objects.filter(job=job).exists())
        self.assertFalse(FailedExecution.objects.exists())

    def test_retention_of_failed_jobs_that_loses_a_deadlock_is_retried(self) -> None:
        """Retention locks a failed execution, then deletes its job: a
        session holding the job and asking for the execution deadlocks
        with it. The batch runs again; nothing is half-deleted."""
        job = Job.objects.get(result_id=tasks.fail.enqueue("x").id)
        work_off()
        failed = FailedExecution.objects.get(job=job)
        retention = Retention(finished_older_than=None, failed_older_than=timedelta(0))
        with self.assertLogs("robust_queue.models.sql.deadlocks", "WARNING") as logs:
            first = self._lose_deadlock(job, failed, lambda: retention.clear("default"))
        self.assertIn("Retention: deadlock", logs.output[0])
        self.assertIn("retrying in", logs.output[0])
        self.assertNotIn("Traceback", "\n".join(logs.output))
        if first["failed"] == 0:
            # The retry found the execution held by the winner: intact.
            self.assertTrue(FailedExecution.objects.filter(pk=failed.pk).exists())
            self.assertEqual(retention.clear("default")["failed"], 1)
        self.assertFalse(Job.objects.exists())
        self.assertFalse(FailedExecution.objects.exists())

    def test_retention_of_finished_jobs_that_loses_a_deadlock_is_retried(self) -> None:
        """Retention deletes a batch of finished jobs in ascending order;
        a session holding the later one and asking for the earlier one
        deadlocks with it. The batch runs again and clears both."""
        tasks.add.enqueue(1, 2), tasks.add.enqueue(3, 4)
        self.assertEqual(work_off(), 2)
        earlier, later = Job.objects.order_by("pk")
        retention = Retention(finished_older_than=timedelta(0))
        with self.assertLogs("robust_queue.models.sql.deadlocks", "WARNING") as logs:
            self._lose_deadlock(later, earlier, lambda: retention.clear("default"))
        self.assertIn("Retention: deadlock", logs.output[0])
        self.assertNotIn("Traceback", "\n".join(logs.output))
        self.assertFalse(Job.objects.exists())


class LockConflictTests(TransactionTestCase):
    def test_other_errors_are_not_retried(self) -> None:
        calls = []

        def broken() -> None:
            calls.append(1)
            raise DatabaseError("no such table")

        with self.assertRaises(DatabaseError):
            retry_on_lock_conflict(broken, using="default", what="test")
        self.assertEqual(calls, [1])
        self.assertIsNone(dialect_for("default").lock_conflict(DatabaseError("no such table")))
        self.assertIsNone(dialect_for("default").lock_conflict(ValueError(1213)))

    def test_a_lock_wait_timeout_is_a_lock_conflict_on_mysql(self) -> None:
        if connection.vendor != "mysql":
            self.skipTest("innodb_lock_wait_timeout is MySQL's")
        job = Job.objects.get(result_id=tasks.add.enqueue(1, 2).id)
        errors: list[BaseException] = []

        def wait_for_the_row() -> None:
            try:
                with connections["default"].cursor() as cursor:
                    cursor.execute("SET SESSION innodb_lock_wait_timeout = 1")
                with transaction.atomic():
                    list(Job.objects.select_for_update().filter(pk=job.pk))
            except DatabaseError as exc:
                errors.append(exc)
            finally:
                connections.close_all()

        with transaction.atomic():
            list(Job.objects.select_for_update().filter(pk=job.pk))
            thread = threading.Thread(target=wait_for_the_row)
            thread.start()
            thread.join(30)
        [error] = errors
        self.assertEqual(dialect_for("default").lock_conflict(error), "lock wait timeout")
