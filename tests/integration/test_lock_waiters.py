"""The test helper that kills lock waiters kills only this database's."""

from __future__ import annotations

import threading
from unittest import skipIf

from django.db import DatabaseError, connection, connections, transaction
from django.test import TransactionTestCase

from robust_queue.models import Process, ProcessKind
from tests.connections import LOCK_POLL, waiting_on_locks
from tests.helpers import wait_until


def session_id(alias: str) -> int:
    with connections[alias].cursor() as cursor:
        postgresql = connections[alias].vendor == "postgresql"
        cursor.execute("SELECT pg_backend_pid()" if postgresql else "SELECT CONNECTION_ID()")
        return int(cursor.fetchone()[0])


@skipIf(connection.vendor == "sqlite", "SQLite has no sessions to kill")
class WaitingOnLocksTests(TransactionTestCase):
    databases = {"default", "queue"}

    def test_a_session_of_another_database_is_not_listed(self) -> None:
        """Another test run (a CI cell beside this one) waits on a lock in
        its own database: not ours to kill."""
        row = Process.objects.using("queue").register(kind=ProcessKind.WORKER, name="w", pid=1)
        locked, release, waiter = threading.Event(), threading.Event(), []

        def hold() -> None:
            try:
                with transaction.atomic(using="queue"):
                    Process.objects.using("queue").select_for_update().get(pk=row.pk)
                    locked.set()
                    release.wait(30)
            finally:
                connections.close_all()

        def wait() -> None:
            try:
                waiter.append(session_id("queue"))
                with transaction.atomic(using="queue"):
                    Process.objects.using("queue").select_for_update().get(pk=row.pk)
            except DatabaseError:
                pass
            finally:
                connections.close_all()

        holder = threading.Thread(target=hold, daemon=True)
        holder.start()
        # The waiter must come second, or it takes the lock and never waits.
        self.assertTrue(locked.wait(30))
        blocked = threading.Thread(target=wait, daemon=True)
        blocked.start()
        self.addCleanup(blocked.join, 30)
        self.addCleanup(holder.join, 30)
        self.addCleanup(release.set)
        # At wait_until's default pace (0.05 s) MariaDB never refreshes
        # INNODB_TRX, for this test or any other on the server.
        wait_until(lambda: waiter and _waits_anywhere(waiter[0]), timeout=30, interval=LOCK_POLL)
        self.assertNotIn(waiter[0], waiting_on_locks())


def _waits_anywhere(session: int) -> bool:
    """Whether ``session`` waits on a row lock, whatever its database."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT 1 FROM pg_stat_activity WHERE pid = %s AND wait_event_type = 'Lock'",
                [session],
            )
        else:
            cursor.execute(
                "SELECT 1 FROM information_schema.innodb_trx "
                "WHERE trx_mysql_thread_id = %s AND trx_state = 'LOCK WAIT'",
                [session],
            )
        return cursor.fetchone() is not None
