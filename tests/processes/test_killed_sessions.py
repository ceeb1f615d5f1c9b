"""Sessions killed under a running supervisor (MariaDB/MySQL): each kill
is reported in one line, without a traceback, and work goes on."""

from __future__ import annotations

import re
from functools import partial
from unittest import skipUnless

from django.db import connection
from django.test import TransactionTestCase

from robust_queue.models import Job
from testproject import tasks
from tests.helpers import wait_until

from .support import Supervisor

# Polling only: every session the test kills is one a claim uses next.
POLLING = [{"queues": ["*"], "threads": 2, "polling_interval": 0.05, "listen": False}]


def finished(result_id: str) -> bool:
    return Job.objects.filter(result_id=result_id, finished_at__isnull=False).exists()


def kill_other_sessions() -> int:
    """Kill every other session on this test database; how many."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM information_schema.processlist "
            "WHERE db = DATABASE() AND id <> CONNECTION_ID()"
        )
        sessions = [row[0] for row in cursor.fetchall()]
        for session in sessions:
            cursor.execute("KILL CONNECTION %s", [session])
    return len(sessions)


@skipUnless(connection.vendor == "mysql", "ROLLBACK of a killed session: MySQL/MariaDB")
class KilledSessionTests(TransactionTestCase):
    def test_a_killed_session_is_one_warning_line_without_traceback(self) -> None:
        supervisor = Supervisor(self, workers=POLLING)
        supervisor.children("worker")
        first = tasks.add.enqueue(0, 0)
        wait_until(lambda: finished(first.id), timeout=30)
        for round_ in range(3):
            self.assertGreater(kill_other_sessions(), 0)
            # A job run after the kill: the worker reconnected.
            after = tasks.add.enqueue(round_, 1)
            wait_until(partial(finished, after.id), timeout=30)
        wait_until(lambda: "ROLLBACK failed" in supervisor.output(), timeout=30)
        output = supervisor.output()
        self.assertNotIn("Traceback", output)
        for line in re.findall(r".*ROLLBACK failed.*", output):
            self.assertRegex(line, r"ROLLBACK failed \(\w+: .+\); closing the connection$")
