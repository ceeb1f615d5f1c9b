"""One SQL dialect per database vendor: statements in, rows and ids out.

The hot transitions (enqueue, claim, finish) skip the ORM's query building
and run plain SQL; so do the few statements that differ between vendors.
``dialect_for(alias)`` picks the vendor's dialect once per connection and
keeps it (with its quoted table names); the models call its verbs
(``claim``, ``finish``, ``transaction``, ``notify`` ...) and never test the
vendor themselves.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from django.db import NotSupportedError, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from .base import ClaimedRows, Dialect
from .mysql import MySQLDialect
from .postgresql import NOTIFY_CHANNEL, PostgreSQLDialect
from .sqlite import SQLiteDialect
from .statements import Statement, queue_filter

__all__ = [
    "NOTIFY_CHANNEL",
    "ClaimedRows",
    "Dialect",
    "MySQLDialect",
    "PostgreSQLDialect",
    "SQLiteDialect",
    "Statement",
    "dialect_for",
    "dialect_of",
    "queue_filter",
]

DIALECTS: dict[str, type[Dialect]] = {
    dialect.vendor: dialect for dialect in (PostgreSQLDialect, MySQLDialect, SQLiteDialect)
}

# Each thread has connection wrappers of its own; a dialect goes with its
# wrapper.
_BY_CONNECTION: WeakKeyDictionary[BaseDatabaseWrapper, Dialect] = WeakKeyDictionary()


def dialect_for(using: str) -> Dialect:
    """The dialect of this thread's connection to the ``using`` database."""
    return dialect_of(connections[using])


def dialect_of(connection: BaseDatabaseWrapper) -> Dialect:
    """The dialect of ``connection`` (a wrapper of ``connections``, not the
    ``django.db.connection`` proxy), made on first use."""
    try:
        return _BY_CONNECTION[connection]
    except KeyError:
        pass
    kind = DIALECTS.get(connection.vendor)
    if kind is None:
        raise NotSupportedError(
            f"Robust Queue runs on PostgreSQL, MySQL/MariaDB and SQLite; the "
            f"{connection.alias!r} database is {connection.display_name} "
            f"(vendor {connection.vendor!r})."
        )
    dialect = _BY_CONNECTION[connection] = kind(connection)
    return dialect
