"""A real worker logs a failed task's message and traceback with its
secrets masked (issue 28 §1)."""

from __future__ import annotations

import signal

from django.test import TransactionTestCase

from robust_queue.models import FailedExecution
from testproject import tasks
from tests.helpers import wait_until
from tests.integration.admin.test_masking_everywhere import HIDDEN, MESSAGE

from .support import Supervisor


class MaskedLogTests(TransactionTestCase):
    def test_the_worker_logs_a_failure_without_its_secrets(self) -> None:
        result = tasks.fail.enqueue(MESSAGE)
        supervisor = Supervisor(self, env={"ROBUST_QUEUE_NO_LOGGING": "1"})
        wait_until(lambda: FailedExecution.objects.exists(), timeout=30)
        wait_until(lambda: f"Job {result.id} failed" in supervisor.output(), timeout=30)
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=30), 0)
        output = supervisor.output()
        self.assertIn(f"Job {result.id} failed: testproject.tasks.fail", output)
        self.assertIn("ValueError: upstream refused: token=********", output)
        for hidden in HIDDEN:
            with self.subTest(hidden=hidden):
                self.assertNotIn(hidden, output)
