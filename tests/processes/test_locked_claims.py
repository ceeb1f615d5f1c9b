"""The supervisor never waits long on a row lock: a dead child's claim
that another session holds does not stall reaping, replacing or stopping."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from datetime import timedelta
from unittest import skipIf

from django.db import connection, transaction
from django.test import TransactionTestCase
from django.utils import timezone

from robust_queue.compat import TaskResultStatus
from robust_queue.models import ClaimedExecution, Process
from testproject import tasks
from tests.helpers import claim, wait_until

from .support import Supervisor, wait_dead

# The supervisor's lock wait is one second; InnoDB's default is 50 s and
# PostgreSQL's is forever.
IN_TIME = 20


@skipIf(connection.vendor == "sqlite", "SQLite has no row locks to hold")
class LockedClaimTests(TransactionTestCase):
    def test_a_dead_worker_whose_claim_is_locked_is_replaced_at_once(self) -> None:
        """Failing the claim waits for the lock; the replacement does not,
        and the claim is failed once the lock is gone."""
        result = tasks.sleep_for.enqueue(60)
        supervisor = Supervisor(self, shutdown_timeout=1)
        [worker] = supervisor.children("worker")
        wait_until(ClaimedExecution.objects.exists, timeout=30)
        with transaction.atomic():
            list(ClaimedExecution.objects.select_for_update())
            os.kill(worker.pid, signal.SIGKILL)
            wait_dead(worker.pid)
            start = time.monotonic()
            try:
                replacement = wait_until(
                    lambda: Process.objects.filter(kind="worker").exclude(pk=worker.pk).first(),
                    timeout=IN_TIME,
                )
            except AssertionError:
                self.fail(f"no replacement within {IN_TIME}s:\n{supervisor.snapshot()}")
            self.assertLess(time.monotonic() - start, IN_TIME)
            status = tasks.sleep_for.get_result(result.id).status
            self.assertEqual(status, TaskResultStatus.RUNNING)
        wait_until(
            lambda: tasks.sleep_for.get_result(result.id).status == TaskResultStatus.FAILED,
            timeout=30,
        )
        [error] = tasks.sleep_for.get_result(result.id).errors
        self.assertEqual(error.exception_class_path, "robust_queue.exceptions.ProcessExitError")
        self.assertIn("was killed by signal SIGKILL", error.traceback)
        self.assertNotEqual(replacement, worker)
        self.assertNotIn("the database is down", supervisor.output())

    def test_a_supervisor_stops_in_time_while_a_dead_childs_claim_is_locked(self) -> None:
        """It gives up recording that exit and says why; the next
        supervisor's pruning fails the claim."""
        tasks.sleep_for.enqueue(60)
        supervisor = Supervisor(self, shutdown_timeout=1)
        [worker] = supervisor.children("worker")
        wait_until(ClaimedExecution.objects.exists, timeout=30)
        with transaction.atomic():
            list(ClaimedExecution.objects.select_for_update())
            os.kill(worker.pid, signal.SIGKILL)
            wait_dead(worker.pid)
            # The supervisor has reaped it (and tries to record its exit).
            wait_until(lambda: "was killed by signal SIGKILL" in supervisor.output(), timeout=30)
            supervisor.send(signal.SIGTERM)
            try:
                self.assertEqual(supervisor.wait(timeout=IN_TIME), 0)
            except subprocess.TimeoutExpired:
                self.fail(f"no exit within {IN_TIME}s:\n{supervisor.snapshot()}")
        self.assertIn("could not record 1 exit(s): their rows are locked", supervisor.output())
        self.assertTrue(ClaimedExecution.objects.filter(process_id=worker.pk).exists())

    def test_pruning_a_process_whose_claim_is_locked_does_not_stall(self) -> None:
        """The stale row goes and the supervisor stops in time; the locked
        claim is left as an orphan, which the next supervisor fails."""
        result = tasks.sleep_for.enqueue(60)
        dead = Process.objects.register(kind="worker", name="dead", pid=999999, hostname="gone")
        claim(process=dead)
        Process.objects.filter(pk=dead.pk).update(
            last_heartbeat_at=timezone.now() - timedelta(hours=1)
        )
        with transaction.atomic():
            list(ClaimedExecution.objects.select_for_update())
            supervisor = Supervisor(self, shutdown_timeout=1, process_alive_threshold=2)
            wait_until(lambda: not Process.objects.filter(pk=dead.pk).exists(), timeout=IN_TIME)
            supervisor.send(signal.SIGTERM)
            try:
                self.assertEqual(supervisor.wait(timeout=IN_TIME), 0)
            except subprocess.TimeoutExpired:
                self.fail(f"no exit within {IN_TIME}s:\n{supervisor.snapshot()}")
        self.assertIn("pruning waits for a row lock", supervisor.output())
        Supervisor(self)
        wait_until(
            lambda: tasks.sleep_for.get_result(result.id).status == TaskResultStatus.FAILED,
            timeout=30,
        )
        [error] = tasks.sleep_for.get_result(result.id).errors
        self.assertEqual(error.exception_class_path, "robust_queue.exceptions.ProcessMissingError")
