"""A listener whose server session is killed says so once, opens a new
one, and hears new jobs again (PostgreSQL's LISTEN, MySQL/MariaDB's watch
of the newest ready id). SQLite's watch has no server session to lose."""

from __future__ import annotations

import threading
from unittest import mock, skipIf

from django.db import connection
from django.test import TransactionTestCase

from robust_queue.processes.listener import Listener
from testproject import tasks
from tests.helpers import wait_until

# The other sessions on this test database: the listener's, here.
_SESSIONS = {
    "postgresql": (
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid() AND query LIKE 'LISTEN %%'"
    ),
    "mysql": (
        "SELECT id FROM information_schema.processlist "
        "WHERE db = DATABASE() AND id <> CONNECTION_ID()"
    ),
}
_KILL = {"postgresql": "SELECT pg_terminate_backend(%s)", "mysql": "KILL CONNECTION %s"}


def listener_sessions() -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(_SESSIONS[connection.vendor])
        return [row[0] for row in cursor.fetchall()]


@skipIf(connection.vendor == "sqlite", "SQLite's watch has no server session to lose")
class ListenerRecoveryTests(TransactionTestCase):
    def setUp(self) -> None:
        self.heard = threading.Semaphore(0)
        self.failures: list[str] = []
        patch = mock.patch("robust_queue.processes.listener.RECONNECT_AFTER", 0.2)
        patch.start()
        self.addCleanup(patch.stop)
        self.listener = Listener(
            "default",
            self.heard.release,
            report_failure=lambda error, doing: self.failures.append(doing),
        )
        self.listener.start()
        self.addCleanup(self.listener._thread.join, 10)
        self.addCleanup(self.listener.stop)

    def assert_hears_a_new_job(self) -> None:
        """A job enqueued while the listener listens is heard (enqueued
        again until then: the listener may still be starting)."""
        for number in range(20):
            tasks.add.enqueue(number, 1)
            if self.heard.acquire(timeout=0.5):
                return
        self.fail("no new job was heard")

    def test_a_killed_session_is_reported_once_and_replaced(self) -> None:
        [session] = wait_until(listener_sessions, timeout=10)
        self.assert_hears_a_new_job()
        with connection.cursor() as cursor:
            cursor.execute(_KILL[connection.vendor], [session])
        replaced = wait_until(lambda: [s for s in listener_sessions() if s != session], timeout=10)
        self.assertEqual(len(replaced), 1)
        self.assert_hears_a_new_job()
        self.assertEqual(self.failures, ["The listener"])
