"""What the database server says about the queue tables' upkeep: dead
rows waiting for vacuum, and the oldest open transaction that holds them.

A queue table churns: every job is an insert and a delete (and updates of
its job row). PostgreSQL keeps the old row versions until vacuum removes
them, and vacuum removes none that an open transaction may still see;
InnoDB keeps them in its undo log (the history list) until purge, which
waits the same way. The rows here come from the server's own views; each
dialect reads them its way (``Dialect.dead_rows``,
``Dialect.oldest_transaction``, ``Dialect.purge_backlog``), and
``operations/table_health.py`` judges them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class DeadRows:
    """A table's live and dead rows as the server's statistics count them."""

    table: str
    live: int
    dead: int
    # The last vacuum of the table (manual or autovacuum), if any.
    vacuumed_at: datetime | None

    @property
    def ratio(self) -> float:
        """Dead rows per live row (a table with no live rows counts one)."""
        return self.dead / max(self.live, 1)


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    """The oldest transaction open on the server, other than the reader's."""

    age: float  # seconds, by the server's clock
    session: int  # PostgreSQL's backend pid, MySQL's thread (connection) id
    database: str
    state: str
    query: str


# Live and dead rows per table (PostgreSQL's cumulative statistics).
POSTGRESQL_DEAD_ROWS = """
SELECT relname, n_live_tup, n_dead_tup, GREATEST(last_vacuum, last_autovacuum)
FROM pg_stat_user_tables
WHERE schemaname = ANY(current_schemas(false)) AND relname = ANY(%s)
ORDER BY relname
"""

# Client sessions only: autovacuum's own transactions hold back no other
# vacuum. A session of another database holds back this one's vacuum only
# for shared catalogs (PostgreSQL 14+), but a server-wide view is what an
# operator acts on; its database is named. Without pg_read_all_stats (or
# superuser) the sessions of other users show no xact_start: they are
# then unseen.
POSTGRESQL_OLDEST_TRANSACTION = """
SELECT EXTRACT(EPOCH FROM clock_timestamp() - xact_start), pid, COALESCE(datname, ''),
    COALESCE(state, ''), COALESCE(left(query, 100), '')
FROM pg_stat_activity
WHERE xact_start IS NOT NULL AND pid <> pg_backend_pid() AND backend_type = 'client backend'
ORDER BY xact_start
LIMIT 1
"""

# trx_started is in the server's own time zone, whatever the session's.
# Reading INNODB_TRX needs the PROCESS privilege.
MYSQL_OLDEST_TRANSACTION = """
SELECT TIMESTAMPDIFF(MICROSECOND, t.trx_started,
        CONVERT_TZ(UTC_TIMESTAMP(6), '+00:00', 'SYSTEM')) / 1000000,
    t.trx_mysql_thread_id, COALESCE(p.DB, ''),
    CASE WHEN p.COMMAND = 'Sleep' THEN 'idle in transaction' ELSE LOWER(t.trx_state) END,
    COALESCE(LEFT(t.trx_query, 100), '')
FROM information_schema.INNODB_TRX AS t
LEFT JOIN information_schema.PROCESSLIST AS p ON p.ID = t.trx_mysql_thread_id
WHERE t.trx_mysql_thread_id <> CONNECTION_ID()
ORDER BY t.trx_started
LIMIT 1
"""

# Undo records purge has not removed yet (MariaDB; MySQL 8 keeps it in
# INNODB_METRICS as trx_rseg_history_len).
MYSQL_HISTORY_LENGTH = (
    "SHOW GLOBAL STATUS LIKE 'Innodb_history_list_length'",
    "SELECT `COUNT` FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rseg_history_len'",
)
