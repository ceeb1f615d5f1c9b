"""The supervisor's bounded wait for row locks (two real sessions)."""

from __future__ import annotations

import threading
import time
from unittest import skipIf

from django.db import DatabaseError, connection, connections, transaction
from django.test import TransactionTestCase

from robust_queue.models import Process, ProcessKind
from robust_queue.models.sql import dialect_for
from robust_queue.processes.lock_wait import bounded_lock_wait

SETTING = {
    "mysql": "SELECT @@SESSION.innodb_lock_wait_timeout",
    "postgresql": "SELECT current_setting('lock_timeout')",
}


def session_setting() -> object:
    with connection.cursor() as cursor:
        cursor.execute(SETTING[connection.vendor])
        return cursor.fetchone()[0]


class RowHolder:
    """Another session that holds a row's lock until ``release()``."""

    def __init__(self, pk: int) -> None:
        self.locked = threading.Event()
        self._release = threading.Event()
        self._thread = threading.Thread(target=self._hold, args=(pk,), daemon=True)
        self._thread.start()
        if not self.locked.wait(30):
            raise AssertionError("the other session did not get the lock")

    def release(self) -> None:
        self._release.set()
        self._thread.join(30)

    def _hold(self, pk: int) -> None:
        try:
            with transaction.atomic():
                Process.objects.select_for_update().get(pk=pk)
                self.locked.set()
                self._release.wait(60)
        finally:
            connections.close_all()


@skipIf(connection.vendor == "sqlite", "SQLite has no row locks")
class BoundedLockWaitTests(TransactionTestCase):
    def setUp(self) -> None:
        self.process = Process.objects.register(kind=ProcessKind.WORKER, name="w", pid=1)

    def test_a_locked_row_fails_fast_as_a_lock_conflict(self) -> None:
        holder = RowHolder(self.process.pk)
        self.addCleanup(holder.release)
        start = time.monotonic()
        with self.assertRaises(DatabaseError) as raised, bounded_lock_wait("default", 1):
            self.process.deregister()
        self.assertLess(time.monotonic() - start, 10)
        self.assertEqual(
            dialect_for("default").lock_conflict(raised.exception), "lock wait timeout"
        )
        holder.release()
        self.process.deregister()
        self.assertFalse(Process.objects.exists())

    def test_the_session_gets_its_own_setting_back(self) -> None:
        before = session_setting()
        with bounded_lock_wait("default", 1):
            self.assertNotEqual(session_setting(), before)
        self.assertEqual(session_setting(), before)

    def test_the_setting_is_restored_after_a_lock_conflict(self) -> None:
        before = session_setting()
        holder = RowHolder(self.process.pk)
        self.addCleanup(holder.release)
        with self.assertRaises(DatabaseError), bounded_lock_wait("default", 1):
            self.process.heartbeat()
        self.assertEqual(session_setting(), before)


@skipIf(connection.vendor != "sqlite", "SQLite only")
class SqliteTests(TransactionTestCase):
    def test_sqlite_runs_the_block_unchanged(self) -> None:
        with self.assertNumQueries(1), bounded_lock_wait("default", 1):
            Process.objects.exists()
