"""PostgreSQL: enqueue, claim and finish in one statement each; NOTIFY.

Each transition is one statement in autocommit, chained with data-modifying
CTEs, and the database still does all of it atomically: rows are locked,
moved and stamped together, or not at all. Idle workers LISTEN for the
queues that got ready jobs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import cached_property, partial
from threading import Event
from typing import Any, ClassVar, cast

from django.db import NotSupportedError
from django.db.models import JSONField

from .adapt import INTEGER_KINDS, TEXT_KINDS
from .base import ClaimedRows, ClaimTime, Dialect, NextClaimArgs
from .claim_position import Position, bounded, bounded_params
from .finish_probe import FINISHED_CHANNEL, FinishProbe, PostgreSQLFinishProbe
from .listen_target import listen_route
from .prepared import hot_cursor
from .server_state import (
    POSTGRESQL_DEAD_ROWS,
    POSTGRESQL_OLDEST_TRANSACTION,
    DeadRows,
    OpenTransaction,
)
from .statements import CLAIM_ORDER, ONE_QUEUE, Statement
from .transaction_settings import setting_per_transaction

# A transaction that lost: deadlock_detected, lock_not_available.
_LOCK_CONFLICTS = {"40P01": "deadlock", "55P03": "lock wait timeout"}
# undefined_table, undefined_column
_MISSING_SCHEMA = ("42P01", "42703")

NOTIFY_CHANNEL = "robust_queue_ready"

# Lock, move and stamp ready jobs: the CTEs "picked", "taken", "claimed";
# {picked} is _PICK, or two of them (claim_position.py).
_CLAIM_STEPS = """
picked AS MATERIALIZED (
    {picked}
), taken AS (
    DELETE FROM {ready} AS ready USING picked WHERE ready.id = picked.id
    RETURNING ready.job_id
), claimed AS (
    INSERT INTO {claimed} (job_id, process_id, created_at)
    SELECT job_id, %s, %s FROM taken RETURNING id, job_id, created_at
)"""

# The stamp is taken just before the statement is sent: a job enqueued
# and committed in between (this thread descheduled) would start before
# it was enqueued, so a start is never earlier than the job's enqueue.
# Never later than _RACE past the stamp either: an enqueue further ahead
# is another host's clock, not this race, and the start (and the run
# time measured from it) stays this worker's. The stamp is sent once, as
# the claim row's created_at.
# Generous: a worker thread can stall for seconds on an overloaded host.
_RACE = timedelta(seconds=5)
_START = (
    "GREATEST(claimed.created_at, LEAST(job.enqueued_at, "
    f"claimed.created_at + INTERVAL '{int(_RACE.total_seconds())} seconds'))"
)
_STAMP = f"""
UPDATE {{job}} AS job
SET started_at = COALESCE(job.started_at, {_START}),
    last_attempted_at = {_START},
    worker_ids = job.worker_ids || jsonb_build_array(%s::text)
FROM claimed WHERE job.id = claimed.job_id
RETURNING job.*, claimed.id AS claim_id"""

_CLAIM = f"WITH {_CLAIM_STEPS}{_STAMP}"

# The locking read of ready rows; {gate} is an extra condition on them.
_PICK = """SELECT id FROM {ready} WHERE {where}{gate}
    ORDER BY {order} LIMIT %s FOR UPDATE SKIP LOCKED"""

# One named queue, as a range of one value: the planner then keeps
# queue_name in the ORDER BY (it drops a column equal to a constant), which
# only rq_ready_poll_queue yields in order. With "queue_name = %s" it may
# walk rq_ready_poll_all instead, filtering out every higher-priority job
# of other queues first, on the guess that the queue's rows are spread
# evenly: 64 ms a claim past 250,000 of them (BENCHMARKS.md). queue_name's
# collation is deterministic, so the range holds exactly the equal names.
_ONE_QUEUE_IN_ORDER = (
    "queue_name >= %s AND queue_name <= %s",
    f"queue_name, {CLAIM_ORDER}",
)

# Waiters of a job's end (robust_queue.wait) LISTEN on FINISHED_CHANNEL;
# the payload is the job's result id. Sent only for a job marked awaited:
# a finish that nobody waits for notifies nobody and takes no notify lock
# at commit.
_NOTIFY_AWAITED = f"""notified AS (
    SELECT pg_notify('{FINISHED_CHANNEL}', result_id) FROM finished WHERE awaited
)"""

# The DELETE is the fence: after a concurrent prune it deletes nothing and
# the UPDATE matches no job. One row: the number of jobs finished (0 or 1).
_FINISH = f"""
WITH taken AS (DELETE FROM {{claimed}} WHERE id = %s RETURNING job_id),
finished AS (
    UPDATE {{job}} AS job SET finished_at = %s, return_value = %s
    FROM taken WHERE job.id = taken.job_id RETURNING job.result_id, job.awaited
), {_NOTIFY_AWAITED}
SELECT count(*) FROM finished WHERE (SELECT count(*) FROM notified) >= 0
"""

# _FINISH, then _CLAIM gated on the fence: a claim that was gone finishes
# nothing and claims nothing. One row per claimed job, or one row of NULLs
# when none was; the last column counts the finished job (0 or 1).
_FINISH_AND_CLAIM = f"""
WITH done AS (DELETE FROM {{claimed}} WHERE id = %s RETURNING job_id),
finished AS (
    UPDATE {{job}} AS job SET finished_at = %s, return_value = %s
    FROM done WHERE job.id = done.job_id RETURNING job.result_id, job.awaited
), {_NOTIFY_AWAITED},{_CLAIM_STEPS}, next AS ({_STAMP}
)
SELECT next.*, (SELECT count(*) FROM finished) AS finished
FROM (VALUES (1)) AS one LEFT JOIN next ON true
WHERE (SELECT count(*) FROM notified) >= 0
"""

# _FINISH_AND_CLAIM for several claims, each finish fenced by its own
# claim row: (claim ids, return values) as two arrays. One row per claimed
# job, or one of NULLs; the last column lists the claims finished.
_FINISH_ALL_AND_CLAIM = f"""
WITH outcome AS (
    SELECT * FROM unnest(%s::bigint[], %s::jsonb[]) AS outcome(claim_id, return_value)
), done AS (
    DELETE FROM {{claimed}} AS own USING outcome WHERE own.id = outcome.claim_id
    RETURNING own.id, own.job_id
), finished AS (
    UPDATE {{job}} AS job SET finished_at = %s, return_value = outcome.return_value
    FROM done JOIN outcome ON outcome.claim_id = done.id
    WHERE job.id = done.job_id RETURNING done.id AS claim_id, job.result_id, job.awaited
), {_NOTIFY_AWAITED},{_CLAIM_STEPS}, next AS ({_STAMP}
)
SELECT next.*, (SELECT array_agg(claim_id) FROM finished) AS finished
FROM (VALUES (1)) AS one LEFT JOIN next ON true
WHERE (SELECT count(*) FROM notified) >= 0
"""

# One enqueue of jobs that are due and unlimited: insert them, make them
# ready and wake idle listeners. The parts see one snapshot, so the ready
# rows come from the job INSERT's RETURNING, not from the table.
# Data-modifying CTEs always run; "notified" runs because the final SELECT
# reads it.
_ENQUEUE = """
WITH job AS ({insert} RETURNING id, result_id, queue_name, priority),
ready AS (
    INSERT INTO {ready} (job_id, queue_name, priority, created_at)
    SELECT id, queue_name, priority, %s FROM job
    RETURNING queue_name
), notified AS (
    SELECT pg_notify(%s, name) FROM (SELECT DISTINCT queue_name AS name FROM ready) AS queues
)
SELECT result_id, id FROM job WHERE (SELECT count(*) FROM notified) >= 0
"""


class PostgreSQLDialect(Dialect):
    vendor = "postgresql"
    supports_listen: ClassVar[bool] = True
    # A row comparison, which the ready indexes read as one range (the
    # spelling with OR is a filter over every entry of the priority).
    _SAME_PRIORITY_AFTER = "priority = %s AND (fair_round, job_id) > (0, %s)"

    def insert_ready(self, jobs: Sequence[Any], now: datetime) -> dict[str, int] | None:
        with hot_cursor(self.connection) as cursor:
            cursor.execute(*self.enqueue_ready(jobs, now))
            return dict(cursor.fetchall())

    def notify_finished(self, result_id: str) -> None:
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [FINISHED_CHANNEL, result_id])

    def finish_probe(self, result_id: str) -> FinishProbe:
        return PostgreSQLFinishProbe(self, result_id)

    def notify(self, queue_names: Collection[str]) -> None:
        with self.connection.cursor() as cursor:
            for name in sorted(queue_names):
                cursor.execute("SELECT pg_notify(%s, %s)", [NOTIFY_CHANNEL, name])

    def claim(
        self,
        limit: int,
        queue: Statement,
        process_id: int | None,
        worker_id: str,
        stamp: ClaimTime,
        *,
        resume: bool = False,
    ) -> ClaimedRows:
        # One statement: atomic without a transaction of its own.
        return self.claim_in_transaction(limit, queue, process_id, worker_id, stamp, resume=resume)

    def _claim_locking(
        self,
        limit: int,
        queue: Statement,
        after: Position | None,
        process_id: int | None,
        worker_id: str,
        stamp: ClaimTime,
    ) -> ClaimedRows:
        # One statement: the stamp is taken as late as it can be, just
        # before the statement (and its snapshot) starts.
        statement = self.claim_in_one(limit, queue, process_id, worker_id, stamp(), after)
        with hot_cursor(self.connection) as cursor:
            cursor.execute(*statement)
            columns = _column_names(cursor)[:-1]
            rows = cursor.fetchall()
        return _in_claim_order(columns, [(row[-1], tuple(row[:-1])) for row in rows])

    def finish(self, claim_id: int, job_id: int, now: datetime, return_value: Any) -> bool:
        with hot_cursor(self.connection) as cursor:
            cursor.execute(*self.finish_in_one(claim_id, now, return_value))
            [(finished,)] = cursor.fetchall()
            return cast(int, finished) == 1

    @contextmanager
    def lock_wait(self, seconds: int) -> Iterator[None]:
        # Per transaction, never the session's: behind a pooler a session
        # setting stays on a server session that other clients get.
        value = self._lock_wait_value(seconds)
        with setting_per_transaction(self.connection, "lock_timeout", value):
            yield

    def _lock_wait_value(self, seconds: int) -> Any:
        return f"{seconds}s"

    def listen(
        self, stop: Event, on_notify: Callable[[], None], on_listening: Callable[[], None]
    ) -> None:
        import psycopg  # noqa: PLC0415 - only PostgreSQL deployments have it

        params = listen_route(self.alias).params
        if params is None:
            raise NotSupportedError(f"The {self.alias!r} database is pooled: no LISTEN on it.")
        with psycopg.connect(**params, autocommit=True) as connection:
            connection.execute(f"LISTEN {NOTIFY_CHANNEL}")
            on_listening()
            while not stop.is_set():
                for _ in connection.notifies(timeout=1.0, stop_after=1):
                    on_notify()

    def claim_in_one(
        self,
        limit: int,
        queue: Statement,
        process_id: int | None,
        worker_id: str,
        now: datetime,
        after: Position | None = None,
    ) -> Statement:
        """Lock, move and stamp up to ``limit`` ready jobs (past ``after``)."""
        sql, params = self._claim_sql(_CLAIM, queue, "", limit, after)
        return sql, [*params, process_id, now, worker_id]

    def finish_and_claim(
        self,
        claim_id: int,
        job_id: int,
        now: datetime,
        return_value: Any,
        then: NextClaimArgs,
        stamp: ClaimTime,
        *,
        resume: bool = False,
    ) -> tuple[bool, ClaimedRows]:
        queue = then[1]
        positions = self.claim_positions if resume else None
        after = None if positions is None else positions.start(queue)
        statement = self.finish_and_claim_in_one(claim_id, now, return_value, then, stamp(), after)
        with hot_cursor(self.connection) as cursor:
            cursor.execute(*statement)
            count, result = _finished_and_claimed(cursor)
        finished = bool(count)
        if positions is not None and finished:
            # No scan again from the head here: the finish is committed,
            # and the worker's own claim does it if this one took nothing.
            positions.record(queue, after, result)
        return finished, result

    def finish_all_and_claim(
        self,
        items: Sequence[tuple[int, int, Any]],
        now: datetime,
        then: NextClaimArgs | None,
        stamp: ClaimTime,
        *,
        resume: bool = False,
    ) -> tuple[list[bool], ClaimedRows]:
        if then is None:
            # Nothing to claim, in the same one statement (its NOTIFY of
            # awaited jobs included): a claim of none.
            then = (0, self.claim_filter(None, (), None), None, "")
            resume = False
        queue = then[1]
        positions = self.claim_positions if resume else None
        after = None if positions is None else positions.start(queue)
        limit, _, process_id, worker_id = then
        sql, params = self._claim_sql(
            _FINISH_ALL_AND_CLAIM, queue, " AND EXISTS (SELECT 1 FROM done)", limit, after
        )
        claim_ids = [claim_id for claim_id, _, _ in items]
        values = [self._json(value) for _, _, value in items]
        with hot_cursor(self.connection) as cursor:
            cursor.execute(sql, [claim_ids, values, now, *params, process_id, stamp(), worker_id])
            finished, result = _finished_and_claimed(cursor)
        done = set(finished or ())
        if positions is not None and done:
            positions.record(queue, after, result)
        return [claim_id in done for claim_id in claim_ids], result

    def finish_and_claim_in_one(
        self,
        claim_id: int,
        now: datetime,
        return_value: Any,
        then: NextClaimArgs,
        claimed_at: datetime,
        after: Position | None = None,
    ) -> Statement:
        """Record success on one claim's job at ``now`` and, only if its
        claim was still there, claim ``then``'s (limit, queue, process id,
        worker id) at ``claimed_at`` (past ``after``)."""
        limit, queue, process_id, worker_id = then
        sql, params = self._claim_sql(
            _FINISH_AND_CLAIM, queue, " AND EXISTS (SELECT 1 FROM done)", limit, after
        )
        return sql, [
            claim_id,
            now,
            self._json(return_value),
            *params,
            process_id,
            claimed_at,
            worker_id,
        ]

    def _claim_sql(
        self, template: str, queue: Statement, gate: str, limit: int, after: Position | None
    ) -> Statement:
        """``template`` with its locking read of up to ``limit`` rows, and
        that read's parameters."""
        where, params = queue
        key = (template, where, gate, after is not None)
        sql = self._claim_texts.get(key)
        if sql is None:
            sql = self._claim_texts[key] = self._claim_text(*key)
        if after is not None:
            return sql, bounded_params(params, after, limit)
        if _is_one_queue(where):
            return sql, [params[0], *params, limit]
        return sql, [*params, limit]

    @cached_property
    def _claim_texts(self) -> dict[tuple[str, str, str, bool], str]:
        # Made once per claim filter: only the parameters change.
        return {}

    def _claim_text(self, template: str, where: str, gate: str, resumed: bool) -> str:
        order = CLAIM_ORDER
        # Not for a resumed claim: its ranges then start at an equality on
        # the priority, which a range of queue names before it would turn
        # into a sort of every job past the position.
        if _is_one_queue(where) and not resumed:
            where = f"{_ONE_QUEUE_IN_ORDER[0]}{where[len(ONE_QUEUE) :]}"
            order = _ONE_QUEUE_IN_ORDER[1]
        tables = self.tables

        def pick(where: str) -> str:
            return _PICK.format(ready=tables.ready, where=where, gate=gate, order=order)

        if not resumed:
            picked = pick(where)
        else:
            ranges = bounded(where, [], (0, 0), self._SAME_PRIORITY_AFTER)
            picked = " UNION ALL ".join(
                self._union_branch(n, pick(part)) for n, (part, _) in enumerate(ranges)
            )
            picked += " LIMIT %s"
        return template.format(
            picked=picked, ready=tables.ready, claimed=tables.claimed, job=tables.job
        )

    def _union_branch(self, n: int, select: str) -> str:
        # A locking read may not be a branch of a UNION, but its subquery.
        return f"SELECT * FROM ({select}) AS range_{n}"

    def finish_in_one(self, claim_id: int, now: datetime, return_value: Any) -> Statement:
        """Delete the claim and record success on its job."""
        sql = _FINISH.format(claimed=self.tables.claimed, job=self.tables.job)
        return sql, [claim_id, now, self._json(return_value)]

    def enqueue_ready(self, jobs: Sequence[Any], now: datetime) -> Statement:
        """Insert ``jobs``, make them ready, notify; returns (result id, job
        id) rows.

        Many jobs: their rows as one JSON array of arrays, which the server
        reads back row by row (``jsonb_array_elements``): one
        ``json.dumps`` in C for the whole call, the JSON columns nested as
        they are, instead of a driver's array of text per column (quoted
        value by value in Python). A value JSON cannot carry as it is (a
        custom type the ORM adapts) takes the column arrays instead. One
        job: a single VALUES row (made once per connection), which a
        single enqueue sends faster.
        """
        if len(jobs) == 1:
            return self._enqueue_one(jobs[0], now)
        rows = self._json_rows(jobs)
        if rows is not None:
            return self._enqueue_rows_statement, [rows, now, NOTIFY_CHANNEL]
        params: list[Any] = []
        for field, (name, adapt) in zip(self.job_fields, self._job_adapters, strict=True):
            values = [getattr(job, name) for job in jobs]
            if isinstance(field, JSONField):
                dumps = partial(json.dumps, cls=field.encoder)
                # None is SQL NULL in a JSONField, as Django stores it.
                params.append([None if value is None else dumps(value) for value in values])
            else:
                params.append([adapt(value) for value in values])
        return self._enqueue_statement, [*params, now, NOTIFY_CHANNEL]

    def _json_rows(self, jobs: Sequence[Any]) -> str | None:
        """``jobs``' rows as one JSON text, an array per job in
        ``job_fields`` order; None if a value is not one that JSON carries
        as the column stores it (``_json_row_value``)."""
        names = self._json_row_names
        if names is None:
            return None
        try:
            rows = [[getattr(job, name) for name in names] for job in jobs]
            return json.dumps(rows, default=_json_row_value, separators=(",", ":"))
        except _NotPlain:
            return None

    @cached_property
    def _json_row_names(self) -> list[str] | None:
        # Text, integers, booleans, datetimes and JSON columns with the
        # default encoder; None (the column arrays) for anything else.
        names = []
        for field in self.job_fields:
            kind = field.get_internal_type()
            if kind not in _JSON_ROW_KINDS or getattr(field, "encoder", None) is not None:
                return None
            names.append(field.attname)
        return names

    @cached_property
    def _enqueue_rows_statement(self) -> str:
        values = []
        for n, field in enumerate(self.job_fields):
            if isinstance(field, JSONField):
                # A JSON null is SQL NULL in a JSONField, as Django stores it.
                values.append(f"nullif(row -> {n}, 'null')")
            else:
                values.append(f"(row ->> {n})::{self._base_type(field)}")
        insert = (
            f"INSERT INTO {self.tables.job} ({self.job_columns}) SELECT {', '.join(values)} "
            "FROM jsonb_array_elements(%s::jsonb) AS row"
        )
        return _ENQUEUE.format(insert=insert, ready=self.tables.ready)

    def _enqueue_one(self, job: Any, now: datetime) -> Statement:
        return self._enqueue_one_sql, [*self.job_values([job]), now, NOTIFY_CHANNEL]

    @cached_property
    def _enqueue_one_sql(self) -> str:
        insert, row = self._job_insert
        return _ENQUEUE.format(insert=f"{insert}{row}", ready=self.tables.ready)

    @cached_property
    def _enqueue_statement(self) -> str:
        # One array per column of ``job_fields``, in that order.
        arrays = ", ".join(f"(%s)::{self._base_type(field)}[]" for field in self.job_fields)
        insert = (
            f"INSERT INTO {self.tables.job} ({self.job_columns}) SELECT * FROM unnest({arrays})"
        )
        return _ENQUEUE.format(insert=insert, ready=self.tables.ready)

    def _base_type(self, field: Any) -> str:
        """``field``'s column type without its length (varchar, not
        varchar(64)): the column's own type checks the length."""
        return str(field.db_type(self.connection)).split("(")[0]

    def _lock_conflict_of(self, error: BaseException) -> str | None:
        sqlstate = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
        return _LOCK_CONFLICTS.get(sqlstate) if isinstance(sqlstate, str) else None

    def _lacks_schema(self, error: BaseException) -> bool:
        sqlstate = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
        return sqlstate in _MISSING_SCHEMA

    sees_transactions: ClassVar[bool] = True

    def dead_rows(self, tables: Sequence[str]) -> list[DeadRows] | None:
        with self.connection.cursor() as cursor:
            cursor.execute(POSTGRESQL_DEAD_ROWS, [list(tables)])
            rows = cursor.fetchall()
        return [DeadRows(name, int(live), int(dead), at) for name, live, dead, at in rows]

    def oldest_transaction(self) -> OpenTransaction | None:
        with self.connection.cursor() as cursor:
            cursor.execute(POSTGRESQL_OLDEST_TRANSACTION)
            row = cursor.fetchone()
        return None if row is None else _open_transaction(row)


# Field kinds whose stored value JSON carries as it is (_json_rows): the
# kinds the enqueue's own adapters handle without the ORM.
_JSON_ROW_KINDS = TEXT_KINDS | INTEGER_KINDS | {"BooleanField", "DateTimeField", "JSONField"}


class _NotPlain(Exception):
    """A value of a job's row that JSON does not carry as stored."""


def _json_row_value(value: Any) -> Any:
    """An aware datetime as ISO 8601 text (``timestamptz`` reads it
    back exactly); anything else is not plain: the column arrays take it."""
    if type(value) is datetime and value.tzinfo is not None:
        return value.isoformat()
    raise _NotPlain


def _column_names(cursor: Any) -> list[str]:
    """The names of the result's columns, read from libpq's result: a
    claim returns the job's ~25, for which ``cursor.description`` builds a
    column object each (type lookups included) on every claim."""
    result = getattr(getattr(cursor, "cursor", cursor), "pgresult", None)
    if result is None:
        return [column[0] for column in cursor.description]
    return [result.fname(i).decode() for i in range(result.nfields)]


def _finished_and_claimed(cursor: Any) -> tuple[Any, ClaimedRows]:
    """A finish-and-claim's answer: its last column (what it finished, the
    same on every row), and the jobs claimed (their claim id is the column
    before; one row of NULLs when none was)."""
    columns = _column_names(cursor)[:-2]
    rows = cursor.fetchall()
    claimed = [(row[-2], tuple(row[:-2])) for row in rows if row[-2] is not None]
    return (rows[0][-1] if rows else None), _in_claim_order(columns, claimed)


def _is_one_queue(where: str) -> bool:
    return where == ONE_QUEUE or where.startswith(f"{ONE_QUEUE} ")


def _open_transaction(row: Sequence[Any]) -> OpenTransaction:
    age, session, database, state, query = row
    return OpenTransaction(float(age), int(session), str(database), str(state), str(query))


def _in_claim_order(columns: list[str], rows: list[tuple[int, tuple[Any, ...]]]) -> ClaimedRows:
    """(claim id, job row) pairs sorted as claimed: RETURNING has no order."""
    priority, at = columns.index("priority"), columns.index("id")
    rows.sort(key=lambda pair: (-pair[1][priority], pair[1][at]))
    return ClaimedRows(columns, rows)
