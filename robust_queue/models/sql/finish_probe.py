"""How a waiter learns that one job ended, per database, on a connection
of its own (closed with the probe, whatever the caller's transaction).

- PostgreSQL: LISTEN on ``FINISHED_CHANNEL``, then mark the job awaited:
  its finish NOTIFYs with its result id (``postgresql.py``). The LISTEN
  connects where ``listen_target.py`` says; a pooled database without a
  direct connection is polled as MySQL/MariaDB are.
- SQLite: ``PRAGMA data_version`` every ``SQLITE_EVERY`` seconds; the
  job's row is read only when another connection committed.
- MySQL/MariaDB: no change signal that is cheaper than the row itself,
  so ``wait`` only sleeps, and the caller's back-off spaces the reads of
  the job by its unique result id.

``is_finished`` answers True (finished or failed), False, or None (no
such job: never stored, or cleared).
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from typing import Any, Protocol

from django.apps import apps
from django.db.backends.base.base import BaseDatabaseWrapper

from .listen_target import listen_route
from .tables import Tables


class Dialect(Protocol):
    """What a probe reads of its dialect (``base.Dialect``, which imports
    this module)."""

    @property
    def connection(self) -> BaseDatabaseWrapper: ...

    @property
    def tables(self) -> Tables: ...


# Seconds between two looks at SQLite's data version.
SQLITE_EVERY = 0.02
FINISHED_CHANNEL = "robust_queue_finished"

_ENDED = (
    "SELECT job.finished_at IS NOT NULL OR EXISTS "
    "(SELECT 1 FROM {failed} failed WHERE failed.job_id = job.id) "
    "FROM {job} job WHERE job.result_id = {mark}"
)


class FinishProbe:
    """Polling with the caller's back-off (MySQL/MariaDB)."""

    mark = "%s"

    def __init__(self, dialect: Dialect, result_id: str) -> None:
        self.result_id = result_id
        quote = dialect.connection.ops.quote_name
        failed = apps.get_model("robust_queue", "FailedExecution")._meta.db_table
        self._ended = _ENDED.format(failed=quote(failed), job=dialect.tables.job, mark=self.mark)
        self._connection: Any = self._connect(dialect)

    def _connect(self, dialect: Dialect) -> Any:
        wrapper = dialect.connection
        connection = wrapper.get_new_connection(wrapper.get_connection_params())
        with closing(connection.cursor()) as cursor:
            # Each read sees what has been committed since.
            cursor.execute("SET autocommit = 1")
        return connection

    def is_finished(self) -> bool | None:
        with closing(self._connection.cursor()) as cursor:
            cursor.execute(self._ended, [self.result_id])
            row = cursor.fetchone()
        return None if row is None else bool(row[0])

    def wait(self, seconds: float) -> None:
        """Return after ``seconds``, or sooner once the job may have ended."""
        time.sleep(max(seconds, 0))

    def close(self) -> None:
        self._connection.close()


class SQLiteFinishProbe(FinishProbe):
    mark = "?"

    def _connect(self, dialect: Dialect) -> Any:
        name = dialect.connection.settings_dict["NAME"]
        connection = sqlite3.connect(name, isolation_level=None, timeout=5)
        self._version = _one(connection, "PRAGMA data_version")
        return connection

    def wait(self, seconds: float) -> None:
        deadline = time.monotonic() + max(seconds, 0)
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(SQLITE_EVERY, left))
            version = _one(self._connection, "PRAGMA data_version")
            if version != self._version:
                self._version = version
                return


class PostgreSQLFinishProbe(FinishProbe):
    _listening = True

    def _connect(self, dialect: Dialect) -> Any:
        import psycopg  # noqa: PLC0415 - only PostgreSQL deployments have it

        wrapper = dialect.connection
        params = listen_route(wrapper.alias).params
        # A pooled database and no direct connection: the reads go through
        # the pooler and the wait is the caller's back-off (as on MySQL).
        self._listening = params is not None
        if params is None:
            return psycopg.connect(**wrapper.get_connection_params(), autocommit=True)
        connection = psycopg.connect(**params, autocommit=True)
        try:
            connection.execute(f"LISTEN {FINISHED_CHANNEL}")
            # After the LISTEN: a finish that commits from now on sees the
            # mark and notifies; one before it is seen by the first read.
            connection.execute(
                f"UPDATE {dialect.tables.job} SET awaited = true "
                "WHERE result_id = %s AND finished_at IS NULL AND NOT awaited",
                [self.result_id],
            )
        except BaseException:
            connection.close()
            raise
        return connection

    def wait(self, seconds: float) -> None:
        if not self._listening:
            super().wait(seconds)
            return
        deadline = time.monotonic() + max(seconds, 0)
        while (left := deadline - time.monotonic()) > 0:
            for notify in self._connection.notifies(timeout=left, stop_after=1):
                if notify.payload == self.result_id:
                    return


def _one(connection: sqlite3.Connection, sql: str) -> Any:
    [(value,)] = connection.execute(sql).fetchall()
    return value
