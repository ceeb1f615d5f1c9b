"""The statements every database shares, built without running them.

A vendor's dialect overrides the few it writes its own way (the class
attributes below, or a method); the rest is plain SQL every supported
server runs alike.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from datetime import datetime
from functools import cached_property
from typing import Any, ClassVar

from django.apps import apps
from django.db import NotSupportedError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field

from .adapt import Adapter, adapter
from .claim_position import SAME_PRIORITY_AFTER, Position, bounded, bounded_params
from .tables import Tables, tables_of

Statement = tuple[str, list[Any]]


class Statements:
    """Statements for one connection: names quoted, values adapted for it."""

    vendor: ClassVar[str]
    # worker_ids with one string appended: attempts == len(worker_ids).
    _APPEND: ClassVar[str]
    # How a paused task's path is compared with a job's.
    _PAUSED_PATHS: ClassVar[str] = "p.task_path = j.task_path"
    # A resumed claim's range of the same priority (claim_position.py).
    _SAME_PRIORITY_AFTER: ClassVar[str] = SAME_PRIORITY_AFTER

    def __init__(self, connection: BaseDatabaseWrapper) -> None:
        # Weak: the cache of dialects is keyed by the connection.
        self._connection = weakref.ref(connection)
        self.alias = connection.alias

    @property
    def connection(self) -> BaseDatabaseWrapper:
        connection = self._connection()
        if connection is None:
            raise RuntimeError(f"The {self.alias!r} connection of this dialect is gone.")
        return connection

    @cached_property
    def tables(self) -> Tables:
        return tables_of(self.connection)

    @cached_property
    def _return_value_field(self) -> Field[Any, Any]:
        field: Field[Any, Any] = apps.get_model("robust_queue", "Job")._meta.get_field(
            "return_value"
        )
        return field

    @cached_property
    def job_fields(self) -> list[Field[Any, Any]]:
        """The job table's fields an enqueue writes (``ENQUEUE_COLUMNS``)."""
        job = apps.get_model("robust_queue", "Job")
        return [field for field in job._meta.concrete_fields if field.name in ENQUEUE_COLUMNS]

    def insert_jobs(self, jobs: Sequence[Any]) -> list[Statement]:
        """Multi-row INSERTs of ``jobs`` (model instances) returning (id,
        result id); as many statements as the database's limit on
        parameters needs."""
        statements = []
        for chunk in self._chunks(jobs, len(self.job_fields)):
            sql, params = self.job_rows(chunk)
            statements.append((f"{sql} RETURNING id, result_id", params))
        return statements

    def job_rows(self, jobs: Sequence[Any]) -> Statement:
        """One INSERT of ``jobs`` (model instances) with a VALUES row each;
        no RETURNING."""
        insert, row = self._job_insert
        return f"{insert}{', '.join([row] * len(jobs))}", self.job_values(jobs)

    def job_values(self, jobs: Sequence[Any]) -> list[Any]:
        """The values of ``jobs``' rows, in ``job_fields`` order, adapted as
        Django's ``bulk_create`` adapts them (``adapt.adapter``; no job
        field sets its value on save, so ``pre_save`` is the attribute)."""
        return [adapt(getattr(job, name)) for job in jobs for name, adapt in self._job_adapters]

    @cached_property
    def _job_adapters(self) -> list[tuple[str, Adapter]]:
        fields = self.job_fields
        assert not any(getattr(field, "auto_now", False) for field in fields)
        assert not any(getattr(field, "auto_now_add", False) for field in fields)
        return [(field.attname, adapter(field, self.connection)) for field in fields]

    @cached_property
    def job_columns(self) -> str:
        """``job_fields``' columns, quoted, comma-separated: an INSERT's list."""
        quote = self.connection.ops.quote_name
        return ", ".join(quote(field.column) for field in self.job_fields)

    @cached_property
    def _job_insert(self) -> tuple[str, str]:
        # ("INSERT INTO job (columns) VALUES ", one row of placeholders).
        row = "(" + ", ".join(["%s"] * len(self.job_fields)) + ")"
        return f"INSERT INTO {self.tables.job} ({self.job_columns}) VALUES ", row

    def insert_ready_rows(
        self, jobs: Sequence[Any], ids: dict[str, int], now: datetime
    ) -> list[Statement]:
        """INSERTs making ``jobs`` ready; ``ids``: {result id: job id}."""
        created = self._datetime(now)
        statements = []
        for chunk in self._chunks(jobs, 4):
            params = [
                value
                for job in chunk
                for value in (ids[job.result_id], job.queue_name, job.priority, created)
            ]
            values = ", ".join(["(%s, %s, %s, %s)"] * len(chunk))
            sql = (
                f"INSERT INTO {self.tables.ready} (job_id, queue_name, priority, created_at) "
                f"VALUES {values}"
            )
            statements.append((sql, params))
        return statements

    def _chunks(self, rows: Sequence[Any], columns: int) -> list[Sequence[Any]]:
        # SQLite caps a statement's parameters; other servers cap its size.
        limit = self.connection.features.max_query_params
        size = min(_ROWS_PER_INSERT, max(1, limit // columns) if limit else _ROWS_PER_INSERT)
        return [rows[start : start + size] for start in range(0, len(rows), size)]

    def lock_ready(self, limit: int, queue: Statement, after: Position | None = None) -> Statement:
        """(ready id, job id) of up to ``limit`` ready jobs, in claim order;
        past ``after``, if given (``claim_position.py``).

        SQLite has no row locks: the caller's IMMEDIATE transaction is one.
        A server that locks rows but cannot skip locked ones is refused.
        """
        where, params = queue
        features = self.connection.features
        if features.has_select_for_update and not features.has_select_for_update_skip_locked:
            raise NotSupportedError(
                "Robust Queue claims with SELECT ... FOR UPDATE SKIP LOCKED, which "
                f"this {self.connection.display_name} server does not support "
                "(MariaDB >= 10.6, MySQL >= 8.0.1, PostgreSQL >= 9.5 do)."
            )
        key = (where, after is not None)
        sql = self._lock_texts.get(key)
        if sql is None:
            sql = self._lock_texts[key] = self._lock_text(where, after is not None)
        if after is None:
            return sql, [*params, limit]
        return sql, bounded_params(params, after, limit)

    @cached_property
    def _lock_texts(self) -> dict[tuple[str, bool], str]:
        # Made once per claim filter: only the parameters change.
        return {}

    def _lock_text(self, where: str, resumed: bool) -> str:
        lock = " FOR UPDATE SKIP LOCKED" if self.connection.features.has_select_for_update else ""
        select = f"SELECT id, job_id FROM {self.tables.ready} WHERE {{}} "
        select += f"ORDER BY {CLAIM_ORDER} LIMIT %s{lock}"
        if not resumed:
            return select.format(where)
        # An index range each, in claim order (claim_position.py).
        ranges = bounded(where, [], (0, 0), self._SAME_PRIORITY_AFTER)
        branches = (
            self._union_branch(n, select.format(part)) for n, (part, _) in enumerate(ranges)
        )
        return " UNION ALL ".join(branches) + " LIMIT %s"

    def _union_branch(self, n: int, select: str) -> str:
        """``select``, a locking read, as the ``n``-th branch of a UNION."""
        return f"({select})"

    def claim_reads(self, limit: int, queue: Statement, after: Position | None) -> list[Statement]:
        """The statements of a claim's locking read, run in order in its
        transaction; the last one's rows are ``lock_ready``'s."""
        return [self.lock_ready(limit, queue, after)]

    def insert_claims(
        self, job_ids: Sequence[int], process_id: int | None, now: datetime
    ) -> tuple[str, list[Any], bool]:
        """One INSERT of the claims; True if it returns (job id, claim id)."""
        returning = bool(self.connection.features.can_return_rows_from_bulk_insert)
        values = ", ".join(["(%s, %s, %s)"] * len(job_ids))
        sql = f"INSERT INTO {self.tables.claimed} (job_id, process_id, created_at) VALUES {values}"
        if returning:
            sql += " RETURNING job_id, id"
        created = self._datetime(now)
        params = [value for job_id in job_ids for value in (job_id, process_id, created)]
        return sql, params, returning

    def claim_ids(self, job_ids: Sequence[int]) -> Statement:
        """(job id, claim id) of claims, where the INSERT returned none (MySQL)."""
        return (
            f"SELECT job_id, id FROM {self.tables.claimed} WHERE job_id IN ({marks(job_ids)})",
            list(job_ids),
        )

    def stamp_jobs(self, job_ids: Sequence[int], worker_id: str, now: datetime) -> Statement:
        """Record a claim on its jobs: attempts == len(worker_ids)."""
        stamp = self._datetime(now)
        sql = (
            f"UPDATE {self.tables.job} SET started_at = COALESCE(started_at, %s), "
            f"last_attempted_at = %s, worker_ids = {self._APPEND} WHERE id IN ({marks(job_ids)})"
        )
        return sql, [stamp, stamp, worker_id, *job_ids]

    def select_jobs(self, job_ids: Sequence[int]) -> Statement:
        return f"SELECT * FROM {self.tables.job} WHERE id IN ({marks(job_ids)})", list(job_ids)

    def delete_claim(self, claim_id: int) -> Statement:
        return f"DELETE FROM {self.tables.claimed} WHERE id = %s", [claim_id]

    def delete_uncancelled_claim(self, claim_id: int) -> Statement:
        sql = f"DELETE FROM {self.tables.claimed} WHERE id = %s AND cancel_requested_at IS NULL"
        return sql, [claim_id]

    def claim_exists(self, claim_id: int) -> Statement:
        return f"SELECT 1 FROM {self.tables.claimed} WHERE id = %s", [claim_id]

    def finish_job(self, job_id: int, now: datetime, return_value: Any) -> Statement:
        sql = f"UPDATE {self.tables.job} SET finished_at = %s, return_value = %s WHERE id = %s"
        return sql, [self._datetime(now), self._json(return_value), job_id]

    def task_pause_filter(self, known: Sequence[str] | None) -> str:
        """The claim's guard against paused tasks, read in the claim's snapshot.

        ``known`` is the caller's last read of the task pauses. Empty: one probe
        of the (empty) pause table, so a pause committed since that read stops
        the whole claim until the next read. Otherwise (or None, unknown): each
        candidate job is checked against the pauses.
        """
        pauses, ready = self.tables.task_pause, self.tables.ready
        if known is not None and not known:
            return f"NOT EXISTS (SELECT 1 FROM {pauses})"
        return (
            f"NOT EXISTS (SELECT 1 FROM {self.tables.job} j JOIN {pauses} p "
            f"ON {self._PAUSED_PATHS} WHERE j.id = {ready}.job_id)"
        )

    def queue_pause_filter(self, queue_name: str | None, excluded: Sequence[str]) -> Statement:
        """The claim's guard against paused queues, read in its snapshot.

        A worker's list of pauses may be a second old, and ``Queue.pause()``
        promises that no claim after it returns takes the queue's jobs. The
        guard is one probe, not a check per row (which would change the
        claim's plan): a pause of the named queue, or of any queue ``*``
        does not already exclude, stops the whole claim until the worker
        reads its pauses again.
        """
        probe = f"NOT EXISTS (SELECT 1 FROM {self.tables.pause} WHERE queue_name"
        if queue_name is not None:
            return f"{probe} = %s)", [queue_name]
        if excluded:
            return f"{probe} NOT IN ({marks(excluded)}))", list(excluded)
        return f"NOT EXISTS (SELECT 1 FROM {self.tables.pause})", []

    def for_update(self) -> str:
        """The suffix that locks what a SELECT reads, where rows have locks."""
        return " FOR UPDATE" if self.connection.features.has_select_for_update else ""

    def insert_ignoring_duplicates(self, table: str, values: str) -> str:
        """INSERT ``values`` (``(columns) VALUES (...)``) into ``table``
        (quoted), doing nothing where a unique key already holds them."""
        return f"INSERT INTO {table} {values} ON CONFLICT DO NOTHING"

    def upsert_adding(
        self, table: str, keys: Sequence[str], added: Sequence[str], rows: int
    ) -> str:
        """INSERT ``rows`` rows of ``keys`` + ``added`` into ``table`` (names
        unquoted); a row whose keys exist adds ``added`` to the stored values."""
        quote = self.connection.ops.quote_name
        names = [quote(c) for c in (*keys, *added)]
        row = "(" + ", ".join(["%s"] * len(names)) + ")"
        sql = f"INSERT INTO {quote(table)} ({', '.join(names)}) VALUES {', '.join([row] * rows)}"
        return sql + self._adding(quote(table), [quote(c) for c in keys], [quote(c) for c in added])

    def _adding(self, table: str, keys: list[str], added: list[str]) -> str:
        sets = ", ".join(f"{c} = {table}.{c} + excluded.{c}" for c in added)
        return f" ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {sets}"

    def _datetime(self, value: datetime) -> Any:
        return self.connection.ops.adapt_datetimefield_value(value)

    def _json(self, value: Any) -> Any:
        return self._return_value_field.get_db_prep_save(value, self.connection)


# Rows per multi-row INSERT of an enqueue: a bounded statement on servers
# whose limit is the statement's size, not its parameters.
_ROWS_PER_INSERT = 1000

# The job columns these statements' INSERT writes. The others are NULL in
# every job they insert (a new job has not run; one with a fair group is
# inserted by bulk_create), and the row takes the column's NULL: 1.5 %
# of an enqueue's instructions. A new column of Job goes here, or in
# the list of columns left out in tests/unit/sql/test_enqueue_columns.py.
ENQUEUE_COLUMNS = frozenset(
    {
        "result_id",
        "task_path",
        "queue_name",
        "priority",
        "backend_alias",
        "arguments",
        "concurrency_key",
        "rate_key",
        "run_after",
        "enqueued_at",
        "worker_ids",
        "errors",
        "metadata",
        "snoozes",
        "awaited",
    }
)

# The order workers take ready jobs in: priority, then fair round (0 for
# every job without a fair group, models/fair_rounds.py), then FIFO.
CLAIM_ORDER = "priority DESC, fair_round, job_id"

# The claim's WHERE clause for one named queue (a dialect may rewrite it).
ONE_QUEUE = "queue_name = %s"


def queue_filter(queue_name: str | None, excluded: Sequence[str]) -> Statement:
    """The claim's WHERE clause: one queue, or every queue but ``excluded``."""
    if queue_name is not None:
        return ONE_QUEUE, [queue_name]
    if excluded:
        return f"queue_name NOT IN ({marks(excluded)})", list(excluded)
    return "1 = 1", []


def marks(values: Sequence[Any]) -> str:
    """One ``%s`` per value, comma-separated."""
    return ", ".join(["%s"] * len(values))
