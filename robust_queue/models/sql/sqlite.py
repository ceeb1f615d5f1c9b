"""SQLite: no row locks (the IMMEDIATE transaction is the lock), JSON1.

SQLite has no LISTEN, but one file: an idle worker's listener watches it.
``PRAGMA data_version`` on a connection of its own changes when another
connection commits; only then does it read the newest ready row, and a
newer one than it saw before is the notification. Nothing it runs writes
or takes the write lock, so an idle worker costs the database nothing
between its (backed-off) polls, and a job enqueued meanwhile is picked up
within ``WATCH_EVERY``, not at the next poll.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from threading import Event
from typing import Any, ClassVar

from django.db import NotSupportedError, OperationalError

from .base import Dialect
from .finish_probe import FinishProbe, SQLiteFinishProbe
from .sqlite_writer import write_lock_holder
from .watch import watch_newest_ready

_MISSING_SCHEMA = ("no such table: ", "no such column: ")

# Seconds between two looks at the database's data version.
WATCH_EVERY = 0.02


class SQLiteDialect(Dialect):
    vendor = "sqlite"
    _APPEND = "json_insert(worker_ids, '$[#]', %s)"
    # A DELETE frees its index entries at once: no dead ones to step over.
    resumes_claims: ClassVar[bool] = False

    @property
    def supports_listen(self) -> bool:  # type: ignore[override]
        # An in-memory database is this process's own: nobody else writes it.
        return not self.connection.is_in_memory_db()  # type: ignore[attr-defined]

    def finish_probe(self, result_id: str) -> FinishProbe:
        if self.connection.is_in_memory_db():  # type: ignore[attr-defined]
            raise NotSupportedError(
                "Waiting for a job needs a database that another connection "
                "can open: this SQLite database is in memory."
            )
        return SQLiteFinishProbe(self, result_id)

    def refused_as_locked(self, exc: BaseException) -> bool:
        # The driver's busy error, after the connection's ``timeout``.
        return isinstance(exc, OperationalError) and "is locked" in str(exc)

    def write_lock_holder(self) -> int | None:
        if self.connection.is_in_memory_db():  # type: ignore[attr-defined]
            return None
        return write_lock_holder(str(self.connection.settings_dict["NAME"]))

    def insert_ignoring_duplicates(self, table: str, values: str) -> str:
        return f"INSERT OR IGNORE INTO {table} {values}"

    def _lacks_schema(self, error: BaseException) -> bool:
        # SQLite has no error codes for these: its messages say it.
        message = str(error)
        return message.startswith(_MISSING_SCHEMA) or " has no column named " in message

    def listen(
        self, stop: Event, on_notify: Callable[[], None], on_listening: Callable[[], None]
    ) -> None:
        name = self.connection.settings_dict["NAME"]
        newest_ready = f"SELECT max(id) FROM {self.tables.ready}"
        with closing(sqlite3.connect(name, isolation_level=None, timeout=5)) as watcher:
            version = _DataVersion(watcher)
            watch_newest_ready(
                stop,
                on_notify,
                on_listening,
                lambda: _one(watcher, newest_ready),
                WATCH_EVERY,
                version.changed,
            )


class _DataVersion:
    """Whether another connection has committed since the last ask."""

    def __init__(self, watcher: sqlite3.Connection) -> None:
        self._watcher = watcher
        self._seen = _one(watcher, "PRAGMA data_version")

    def changed(self) -> bool:
        seen, self._seen = self._seen, _one(self._watcher, "PRAGMA data_version")
        return bool(seen != self._seen)


def _one(connection: sqlite3.Connection, sql: str) -> Any:
    """The one value ``sql`` reads."""
    [(value,)] = connection.execute(sql).fetchall()
    return value
