"""The supervisor dies (kill -9): its children stop as on TERM."""

from __future__ import annotations

import os
import signal

from django.test import TransactionTestCase

from robust_queue.models import ClaimedExecution, Job, Process
from testproject import tasks
from tests.helpers import wait_until

from .support import Supervisor, wait_dead


class SupervisorDeathTests(TransactionTestCase):
    def test_a_running_job_goes_back_to_ready_when_the_supervisor_is_killed(self) -> None:
        """The orphaned worker gives its unfinished job back (no error
        recorded) after shutdown_timeout, and deregisters."""
        result = tasks.sleep_for.enqueue(60)
        supervisor = Supervisor(self, shutdown_timeout=1)
        [worker] = supervisor.children("worker")
        wait_until(ClaimedExecution.objects.exists, timeout=30)
        os.kill(supervisor.pid, signal.SIGKILL)
        supervisor.wait(timeout=10)
        wait_dead(worker.pid, timeout=20)
        job = Job.objects.with_executions().get(result_id=result.id)
        self.assertEqual(job.state, "ready")
        self.assertEqual(job.errors, [])
        self.assertFalse(ClaimedExecution.objects.exists())
        self.assertFalse(Process.objects.filter(pk=worker.pk).exists())
