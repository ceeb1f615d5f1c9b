"""A worker that does not stop within the shutdown timeout is killed."""

from __future__ import annotations

import signal
from unittest import skipIf

from django.db import connection, transaction
from django.test import TransactionTestCase

from robust_queue.compat import TaskResultStatus
from robust_queue.models import ClaimedExecution, Job
from testproject import tasks
from tests.helpers import wait_until

from .support import Supervisor


@skipIf(connection.vendor == "sqlite", "SQLite has no row locks to hold")
class KilledAtShutdownTests(TransactionTestCase):
    def test_its_claims_fail_and_are_not_run_again(self) -> None:
        """The worker cannot give its job back (the row is locked), so the
        supervisor kills it past the timeout and fails the claim with
        ProcessExitError instead of putting it back to ready: a stuck
        worker may hold a body that ran."""
        result = tasks.sleep_for.enqueue(30)
        supervisor = Supervisor(self, shutdown_timeout=1)
        wait_until(ClaimedExecution.objects.exists, timeout=30)
        with transaction.atomic():
            list(ClaimedExecution.objects.select_for_update())
            supervisor.send(signal.SIGTERM)
            try:
                wait_until(lambda: "did not stop in time" in supervisor.output(), timeout=30)
            except AssertionError:
                self.fail(f"no kill within 30s:\n{supervisor.snapshot()}")
        self.assertEqual(supervisor.wait(timeout=60), 0)
        fetched = tasks.sleep_for.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.FAILED)
        [error] = fetched.errors
        self.assertEqual(error.exception_class_path, "robust_queue.exceptions.ProcessExitError")
        self.assertIn("did not stop within the shutdown timeout", error.traceback)
        self.assertFalse(Job.objects.filter(ready_execution__isnull=False).exists())
