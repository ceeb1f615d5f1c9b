"""A process told to stop while it waits for the database to register
exits cleanly: exit status 0, no traceback, nothing registered.

Under load a child can still be booting when its supervisor is stopped
during an outage (or, on SQLite, while another connection holds the one
write lock); it used to raise its connection error and be reported as a
crash.
"""

from __future__ import annotations

import signal
import sqlite3
from unittest import skipUnless

from django.conf import settings
from django.db import connection
from django.test import TransactionTestCase

from robust_queue.models import Process
from tests.helpers import wait_until

from .support import Supervisor

WAITING = "waits for the database to register"
STOPPED = "stops before it could register"


def assert_stopped_cleanly(test: TransactionTestCase, supervisor: Supervisor) -> None:
    test.assertEqual(supervisor.wait(timeout=30), 0, supervisor.output())
    output = supervisor.output()
    test.assertIn(STOPPED, output)
    test.assertNotIn("Traceback", output)
    test.assertNotIn("crashed", output)


@skipUnless(connection.vendor == "sqlite", "SQLite's write lock (servers: test_runnable_loop)")
class StopBeforeRegisteringTests(TransactionTestCase):
    def test_term_while_the_write_lock_is_held_exits_cleanly(self) -> None:
        holder = sqlite3.connect(
            settings.DATABASES["default"]["NAME"], isolation_level=None, timeout=30
        )
        self.addCleanup(holder.close)
        holder.execute("BEGIN IMMEDIATE")
        # Without the system checks: Django 6.1's JSONField check runs in a
        # transaction, which IMMEDIATE mode makes wait for this lock (it
        # then reports JSON as unsupported); this test is about what follows.
        supervisor = Supervisor(self, "--skip-checks", env={"ROBUST_QUEUE_SQLITE_TIMEOUT": "1"})
        wait_until(lambda: WAITING in supervisor.output(), timeout=30)
        supervisor.send(signal.SIGTERM)
        assert_stopped_cleanly(self, supervisor)
        holder.rollback()
        self.assertFalse(Process.objects.exists())
