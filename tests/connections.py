"""Finding and killing other sessions on the test database (PG, MariaDB)."""

from __future__ import annotations

from typing import Any

from django.db import connection, connections

from tests.helpers import wait_until

_WAITING = {
    "postgresql": (
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid() ORDER BY pid"
    ),
    # INNODB_TRX lists the whole server's transactions: only this
    # database's, or a test running beside this one (another CI cell) has
    # its sessions killed.
    "mysql": (
        "SELECT trx.trx_mysql_thread_id FROM information_schema.innodb_trx AS trx "
        "JOIN information_schema.processlist AS session ON session.id = trx.trx_mysql_thread_id "
        "WHERE trx.trx_state = 'LOCK WAIT' AND session.db = DATABASE() "
        "AND trx.trx_mysql_thread_id <> CONNECTION_ID() ORDER BY 1"
    ),
}
# InnoDB refreshes INNODB_TRX only once it has not been read for 0.1 s:
# polled more often (wait_until's default 0.05 s), it never shows a new
# lock wait. Every wait on waiting_on_locks() polls at this pace.
LOCK_POLL = 0.25
_POLL = LOCK_POLL
_KILL = {
    "postgresql": "SELECT pg_terminate_backend(%s)",
    "mysql": "KILL CONNECTION %s",
}


def waiting_on_locks() -> list[int]:
    """Ids of the other sessions now waiting for a row lock."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Inside a transaction the statistics views keep one snapshot.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(_WAITING[connection.vendor])
        return [row[0] for row in cursor.fetchall()]


def kill_lock_waiters(times: int, timeout: float = 60) -> None:
    """Kill whichever session waits on a lock, ``times`` times over."""
    for _ in range(times):
        found = wait_until(waiting_on_locks, timeout=timeout, interval=_POLL)
        [session, *_] = found  # type: ignore[misc]
        with connection.cursor() as cursor:
            cursor.execute(_KILL[connection.vendor], [session])
        wait_until(
            lambda session=session: session not in waiting_on_locks(),
            timeout=timeout,
            interval=_POLL,
        )


def kill_session_of(victim: Any) -> None:
    """Kill the server session behind ``victim`` (a connection wrapper,
    this thread's own too) from a connection opened for it."""
    if victim.vendor == "postgresql":
        session = victim.connection.info.backend_pid
    else:
        session = victim.connection.thread_id()
    other = connections.create_connection(victim.alias)
    try:
        with other.cursor() as cursor:
            cursor.execute(_KILL[victim.vendor], [session])
    finally:
        other.close()
