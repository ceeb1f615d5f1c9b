"""PostgreSQL: the hot statements parsed and planned once per session.

Django sends every statement as text with its values inlined (client-side
binding, ``prepare_threshold`` off), so the server parses, rewrites and
plans a claim or a finish anew each time: for a finish, more CPU than
running it. The hot statements (enqueue, claim, finish, finish and claim
next) instead go through a cursor that binds on the server and asks
psycopg to prepare them (``prepare=True``): psycopg keeps the prepared
statements of each connection (``prepared_max`` of them, least recently
used deallocated first) and forgets them when the session is reset
(``DISCARD ALL``, ``DEALLOCATE ALL``). The cursor is Django's wrapper
around it, so errors are Django's and execute wrappers see each statement.

A prepared statement is the server session's: behind a pooler in
transaction mode the next transaction may land on a session that never
saw it. Aliases listed in ``ROBUST_QUEUE["pooled_databases"]`` (which
LISTEN already needs, docs/operations/databases.md) get Django's own
cursor, and so do psycopg 2 and a connection whose time zone Django would
set per cursor. So do connections that log their queries (``DEBUG``, a
test's ``CaptureQueriesContext``): the log then shows each statement with
its values, as it does for every other query, not ``$1``.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper

from ... import conf


def hot_cursor(connection: BaseDatabaseWrapper) -> Any:
    """A cursor for a hot statement on ``connection``: one that prepares
    what it runs where that is safe, else Django's own."""
    if connection.queries_logged or connection.alias in conf.get(conf.POOLED_DATABASES):
        return connection.cursor()
    preparing = _preparing_class()
    if preparing is None:
        return connection.cursor()
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    raw = connection.connection
    if not _same_time_zone(connection, raw):
        return connection.cursor()
    if raw.prepare_threshold is None:
        # Off by Django's default: only what asks (prepare=True) is
        # prepared; Django's own cursors bind on the client and never do.
        raw.prepare_threshold = _ONLY_WHEN_ASKED
    connection.validate_thread_sharing()
    with connection.wrap_database_errors:
        # Django's wrapper without its query log (not logged here, above).
        return connection.make_cursor(preparing(raw))


# A threshold no statement reaches: psycopg prepares nothing by itself.
_ONLY_WHEN_ASKED = 2**62


_PREPARING: list[type[Any] | None] = []


def _preparing_class() -> type[Any] | None:
    if _PREPARING:
        return _PREPARING[0]
    try:
        import psycopg  # noqa: PLC0415 - only PostgreSQL deployments have it
    except ImportError:  # psycopg 2: Django binds on the client only
        _PREPARING.append(None)
        return None

    class PreparingCursor(psycopg.Cursor):
        """Binds on the server and prepares every statement it runs."""

        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            kwargs.setdefault("prepare", True)
            try:
                return super().execute(query, params, **kwargs)
            except (
                psycopg.errors.FeatureNotSupported,
                psycopg.errors.InvalidSqlStatementName,
            ) as exc:
                idle = self.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
                if not (idle and _is_stale(exc)):
                    raise
            # A column was added to or dropped from a table whose rows the
            # statement returns (a migration during a rolling deploy): the
            # server refuses every prepared statement returning them; or
            # other code deallocated a statement by name behind psycopg's
            # back (it notices DISCARD ALL and DEALLOCATE ALL, not that).
            # Drop this session's prepared statements
            # (psycopg forgets its names on seeing it) and run the
            # statement again, prepared anew. Inside a transaction the
            # error stands: the transaction is the caller's to retry.
            super().execute("DEALLOCATE ALL", prepare=False)
            return super().execute(query, params, **kwargs)

    _PREPARING.append(PreparingCursor)
    return PreparingCursor


def _is_stale(exc: BaseException) -> bool:
    """Whether ``exc`` is the server refusing a prepared statement that is
    out of date (its result columns changed: SQLSTATE 0A000) or gone
    (26000)."""
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate == "26000":
        return True
    return sqlstate == "0A000" and "cached plan must not change result type" in str(exc)


def _same_time_zone(connection: Any, raw: Any) -> bool:
    """Whether the connection's own timestamp loader is in Django's time
    zone (Django registers one per cursor otherwise)."""
    from psycopg.pq import Format  # noqa: PLC0415 - only PostgreSQL deployments have it

    timestamptz = 1184
    loader = raw.adapters.get_loader(timestamptz, Format.TEXT)
    return bool(getattr(loader, "timezone", None) == connection.timezone)
