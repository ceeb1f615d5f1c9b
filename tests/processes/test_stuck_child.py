"""A stuck child (SIGSTOP: a stand-in for a deadlock, the GIL held in C, a
swap storm) is killed and replaced by its supervisor, and ``health``
reports it whatever the queues hold."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from pathlib import Path
from unittest import skipUnless

from django.db import DatabaseError, connection, transaction
from django.test import TransactionTestCase

from robust_queue.models import ClaimedExecution, Job, Process
from testproject import tasks
from testproject.models import LedgerEntry
from tests.helpers import wait_until

from .support import Supervisor, child_pids
from .test_health import manage

PRUNED = "robust_queue.exceptions.ProcessPrunedError"
EXITED = "robust_queue.exceptions.ProcessExitError"


def errors(result_id: str) -> list[str]:
    job = Job.objects.get(result_id=result_id)
    return [error["exception_class_path"] for error in job.errors]


def is_finished(result_id: str) -> bool:
    return Job.objects.filter(result_id=result_id, finished_at__isnull=False).exists()


def unhealthy(*args: str) -> dict[str, object] | None:
    """The failed checks of ``health --json``, or None while healthy."""
    result = manage("health", "--json", *args)
    if result.returncode == 0:
        return None
    report = json.loads(result.stdout)
    return {c["name"]: c["detail"] for c in report["checks"] if not c["ok"]}


def is_stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped (state T in /proc)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
    except (OSError, IndexError):
        return False


def holds_a_lock(worker: Process) -> bool:
    """Whether a write by another session now waits on ``worker``."""
    if connection.vendor == "sqlite":
        probe = sqlite3.connect(connection.settings_dict["NAME"], timeout=0.2)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.rollback()
            return False
        except sqlite3.OperationalError:
            return True
        finally:
            probe.close()
    try:
        with transaction.atomic():
            list(Process.objects.select_for_update(nowait=True).filter(pk=worker.pk))
        return False
    except DatabaseError:
        return True


class StuckChildTests(TransactionTestCase):
    def stop_worker(self, supervisor: Supervisor) -> Process:
        """SIGSTOP the supervisor's worker; continue and kill it at cleanup
        if it is still a child of the supervisor (its pid not reused)."""
        [worker] = supervisor.children("worker")
        # Booted, not just registered: by its start line it has told the
        # supervisor which row is its own (a loaded machine once stopped
        # it in between, and a child whose row is unknown is not judged).
        wait_until(lambda: f"started (pid {worker.pid})" in supervisor.output(), 30)

        def release() -> None:
            if worker.pid in child_pids(supervisor.pid):
                os.kill(worker.pid, signal.SIGKILL)
                os.kill(worker.pid, signal.SIGCONT)

        self.addCleanup(release)
        wait_until(lambda: self.stopped_holding_nothing(worker), 30)
        return worker

    def stopped_holding_nothing(self, worker: Process) -> bool:
        """SIGSTOP the worker; continue it again (False) when it was caught
        inside a write, holding what the test must write next: SQLite's one
        write lock (CI once stopped a heartbeat halfway, and the test's own
        delete found the database locked), or its own row elsewhere."""
        os.kill(worker.pid, signal.SIGSTOP)
        # The signal is delivered asynchronously: probe a stopped process.
        wait_until(lambda: is_stopped(worker.pid), 10)
        if not holds_a_lock(worker):
            return True
        os.kill(worker.pid, signal.SIGCONT)
        return False

    def replacement(self, supervisor: Supervisor, stopped: Process) -> Process | None:
        return (
            Process.objects.filter(kind="worker", supervisor__pid=supervisor.pid)
            .exclude(pid=stopped.pid)
            .first()
        )

    def test_a_stopped_worker_is_pruned_killed_and_replaced(self) -> None:
        """Its job fails once with ProcessPrunedError; the stopped process
        is killed and reaped; a new worker registers at once (no crash
        back-off) and runs new work."""
        supervisor = Supervisor(self, process_alive_threshold=3)
        result = tasks.sleep_for.enqueue(120)
        wait_until(lambda: ClaimedExecution.objects.filter(job__result_id=result.id).exists(), 30)
        worker = self.stop_worker(supervisor)
        wait_until(lambda: Job.objects.failed().filter(result_id=result.id).exists(), 30)
        self.assertEqual(errors(result.id), [PRUNED])
        # Killed and reaped: not even a zombie is left.
        wait_until(lambda: worker.pid not in child_pids(supervisor.pid), 15)
        replacement = wait_until(lambda: self.replacement(supervisor, worker), 15)
        assert isinstance(replacement, Process)
        after = tasks.sleep_for.enqueue(0)
        wait_until(lambda: is_finished(after.id), 30)
        self.assertEqual(errors(result.id), [PRUNED])
        output = supervisor.output()
        self.assertIn(f"worker (pid {worker.pid}) is unresponsive", output)
        self.assertIn("starting a fresh one now", output)
        self.assertNotIn("replacing it in", output)
        self.assertNotIn("failed 0 claimed", output)

    def test_health_fails_for_a_worker_that_stopped_heartbeating(self) -> None:
        """Long before the alive threshold, with every queue empty."""
        supervisor = Supervisor(self, process_alive_threshold=120)
        supervisor.children("dispatcher")
        wait_until(lambda: unhealthy() is None, 30)
        worker = self.stop_worker(supervisor)
        failed = wait_until(unhealthy, 30)
        assert isinstance(failed, dict)
        self.assertEqual(list(failed), ["children"], failed)
        self.assertIn(f"(pid {worker.pid}) has not heartbeaten for", failed["children"])

    def test_a_worker_whose_row_is_gone_and_that_does_not_stop_is_replaced(self) -> None:
        """Its row pruned elsewhere while it is stuck: health says the
        supervisor lacks a worker; after the settle time it is killed and
        replaced, and health is fine again."""
        supervisor = Supervisor(self, process_alive_threshold=120, shutdown_timeout=8)
        supervisor.children("dispatcher")
        worker = self.stop_worker(supervisor)
        Process.objects.filter(pk=worker.pk).delete()
        failed = wait_until(unhealthy, 30)
        assert isinstance(failed, dict)
        self.assertEqual(list(failed), ["children"], failed)
        self.assertIn("runs 0 of its 1 worker(s)", failed["children"])
        wait_until(lambda: worker.pid not in child_pids(supervisor.pid), 30)
        wait_until(lambda: self.replacement(supervisor, worker), 15)
        wait_until(lambda: unhealthy() is None, 30)
        self.assertIn("its process row was removed", supervisor.output())

    @skipUnless(
        connection.vendor == "sqlite", "only SQLite has one write lock for the whole database"
    )
    def test_a_worker_stopped_inside_a_write_is_killed_and_replaced(self) -> None:
        """SQLite: a worker stopped while it holds the database's write
        lock keeps every process from writing, its own heartbeat and the
        supervisor's prune included, so it can never be pruned. Once its
        heartbeat has been refused as locked for the alive threshold, the
        supervisor names the lock's holder, kills it (the lock goes with
        it) and replaces it: its job fails once, the write it held is
        rolled back, and new work runs."""
        supervisor = Supervisor(
            self, process_alive_threshold=3, env={"ROBUST_QUEUE_SQLITE_TIMEOUT": "0.5"}
        )
        [worker] = supervisor.children("worker")

        def release() -> None:
            if worker.pid in child_pids(supervisor.pid):
                os.kill(worker.pid, signal.SIGKILL)
                os.kill(worker.pid, signal.SIGCONT)

        self.addCleanup(release)
        result = tasks.stop_inside_a_write.enqueue("held")
        wait_until(lambda: is_stopped(worker.pid), 30)
        wait_until(lambda: Job.objects.failed().filter(result_id=result.id).exists(), 60)
        self.assertEqual(errors(result.id), [EXITED])
        wait_until(lambda: worker.pid not in child_pids(supervisor.pid), 15)
        wait_until(lambda: self.replacement(supervisor, worker), 15)
        after = tasks.add.enqueue(1, 2)
        wait_until(lambda: is_finished(after.id), 30)
        self.assertFalse(LedgerEntry.objects.filter(key="held").exists())
        self.assertEqual(errors(result.id), [EXITED])
        output = supervisor.output()
        self.assertIn(
            f"worker (pid {worker.pid}) is unresponsive (it has held the database's write lock",
            output,
        )
        self.assertIn("starting a fresh one now", output)

    @skipUnless(
        connection.vendor == "sqlite", "only SQLite has one write lock for the whole database"
    )
    def test_a_write_lock_held_by_another_process_is_reported_once(self) -> None:
        """SQLite: a process that is not the supervisor's holds the write
        lock past the alive threshold: the supervisor names it once and
        kills nothing; once it lets go, work goes on with the same worker."""
        supervisor = Supervisor(
            self, process_alive_threshold=3, env={"ROBUST_QUEUE_SQLITE_TIMEOUT": "0.5"}
        )
        [worker] = supervisor.children("worker")
        holder = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
        self.addCleanup(holder.close)
        holder.execute("BEGIN IMMEDIATE")
        named = f"pid {os.getpid()} holds it, not a process of this supervisor"
        wait_until(lambda: named in supervisor.output(), 30)
        holder.execute("ROLLBACK")
        after = tasks.add.enqueue(1, 2)
        wait_until(lambda: is_finished(after.id), 30)
        self.assertEqual(supervisor.output().count(named), 1)
        self.assertNotIn("unresponsive", supervisor.output())
        self.assertIn(worker.pid, child_pids(supervisor.pid))
