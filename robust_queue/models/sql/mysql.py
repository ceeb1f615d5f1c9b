"""MySQL and MariaDB: transactions of their own, one delete per row, bytes.

Django's ``atomic()`` here switches the session out of autocommit mode and
back: ``SET autocommit=0``, the statements, ``COMMIT``, ``SET
autocommit=1``. A claim of one job is five statements and a finish two, run
once per job, so those two extra round trips are a large share of their
cost. Outside any atomic block ``transaction()`` sends ``START
TRANSACTION`` and ``COMMIT`` instead: the session stays in autocommit mode,
which is what Django believes it is in, and the statements in between are
one transaction all the same. Inside an atomic block (a caller's
transaction, a test case) and on a connection with ``AUTOCOMMIT`` off it is
``atomic()``.

mysqlclient sends several statements as one text by default (its
``multi_statements``): in autocommit mode a claim, a finish and a single
enqueue go in one or two round trips instead of four to nine
(``round_trips.py``), with the same statements, locks and commits.

No LISTEN: an idle worker's listener reads the newest ready id every
``WATCH_EVERY`` seconds on a connection of its own (``watch.py``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, closing, contextmanager
from datetime import datetime
from functools import cached_property
from threading import Event
from typing import Any, ClassVar

from django.db import DatabaseError
from django.db.backends.utils import CursorWrapper

from .base import ClaimedRows, ClaimTime, Dialect, NextClaimArgs
from .claim_position import SAME_PRIORITY_AFTER, Position
from .round_trips import BEGIN, COMMIT, Sent, send
from .server_state import MYSQL_HISTORY_LENGTH, MYSQL_OLDEST_TRANSACTION, OpenTransaction
from .statements import Statement
from .watch import watch_newest_ready

# A transaction that lost: ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT.
_LOCK_CONFLICTS = {1213: "deadlock", 1205: "lock wait timeout"}
_PACKET_TOO_LARGE = 1153
_CONNECTION_LOST = (2006, 2013)
# ER_NO_SUCH_TABLE, ER_BAD_FIELD_ERROR
_MISSING_SCHEMA = (1146, 1054)
# Room for the rest of the statement around the value.
_PACKET_MARGIN = 4096

# Whether the DELETE of a claim before it removed the row (a session variable).
_TAKEN = "@robust_queue_taken"
# The lowest priority above a resumed claim's position, if any ready job has
# one (a session variable, set by the claim's first read).
_HIGHER = "@robust_queue_higher"
# How many finishes of a batch took their claim (finish_all_and_claim).
_TAKEN_ALL = "@robust_queue_taken_all"
# The claim order reversed (statements.CLAIM_ORDER), for reading a range from its end.
_CLAIM_ORDER_REVERSED = "priority ASC, fair_round DESC, job_id DESC"
# The claim order past a position (priority, priority, job id, priority), in
# one condition that the range optimizer reads as index ranges in index
# order: one locking read, no UNION (which MariaDB runs through a temporary
# table). The higher priorities only if the backward read found one.
_PAST_POSITION = (
    f"({_HIGHER} IS NOT NULL AND priority > %s OR {SAME_PRIORITY_AFTER} OR priority < %s)"
)
# Seconds between two looks of an idle worker's listener at the newest ready id.
WATCH_EVERY = 0.05

logger = logging.getLogger(__name__)


class MySQLDialect(Dialect):
    vendor = "mysql"
    _APPEND = "JSON_ARRAY_APPEND(worker_ids, '$', %s)"
    # The job's column keeps the server's collation, which may ignore case:
    # compare bytes, like every other pause.
    _PAUSED_PATHS = "BINARY p.task_path = BINARY j.task_path"
    _LOCK_WAIT = (
        "SELECT @@SESSION.innodb_lock_wait_timeout",
        "SET SESSION innodb_lock_wait_timeout = %s",
    )
    # No LISTEN: an idle worker's listener watches the newest ready id.
    supports_listen: ClassVar[bool] = True

    def listen(
        self, stop: Event, on_notify: Callable[[], None], on_listening: Callable[[], None]
    ) -> None:
        """Read the newest ready id every ``WATCH_EVERY`` seconds on a
        connection of its own (``watch.py``): one unlocked read of the
        primary key's last entry, in autocommit mode so that each read sees
        what has been committed."""
        wrapper = self.connection
        newest_ready = f"SELECT MAX(id) FROM {self.tables.ready}"
        with closing(wrapper.get_new_connection(wrapper.get_connection_params())) as watcher:
            with closing(watcher.cursor()) as cursor:
                cursor.execute("SET autocommit = 1")

                def newest() -> int | None:
                    cursor.execute(newest_ready)
                    [(value,)] = cursor.fetchall()
                    return None if value is None else int(value)

                watch_newest_ready(stop, on_notify, on_listening, newest, WATCH_EVERY)

    @property
    def _sends_many(self) -> bool:
        # mysqlclient's option, on unless OPTIONS turn it off (Django passes
        # them to the driver as they are). Other drivers (PyMySQL installed
        # as MySQLdb, MySQL Connector/Python) send one statement per call.
        connection = self.connection
        if getattr(connection.Database, "__name__", None) != "MySQLdb":  # type: ignore[attr-defined]
            return False
        return bool(connection.settings_dict.get("OPTIONS", {}).get("multi_statements", True))

    def _in_own_transaction(self) -> bool:
        """Whether START TRANSACTION ... COMMIT can go inside the texts sent."""
        return self._sends_many and self.connection.get_autocommit()

    def transaction(self, *, savepoint: bool = True) -> AbstractContextManager[None]:
        # START TRANSACTION would commit whatever a session that is not in
        # autocommit mode (AUTOCOMMIT=False, atomic()) has pending.
        if not self.connection.get_autocommit():
            return super().transaction(savepoint=savepoint)
        return self._started_transaction()

    @contextmanager
    def _started_transaction(self) -> Iterator[None]:
        self._execute("START TRANSACTION")
        try:
            yield
            self._execute("COMMIT")
        except BaseException:
            self._roll_back()
            raise

    def insert_ready(self, jobs: Sequence[Any], now: datetime) -> dict[str, int] | None:
        # One job: its ready row takes the id the INSERT just made, so both
        # go in one text (LAST_INSERT_ID() is exact for a one-row INSERT).
        features = self.connection.features
        if len(jobs) != 1 or not self._sends_many or not features.can_return_rows_from_bulk_insert:
            return super().insert_ready(jobs, now)
        statements = [*self.insert_jobs(jobs), *self.ready_rows_of_last_insert(jobs[0], now)]
        if self.connection.get_autocommit():
            with self._own_transaction():
                inserted = self._send(statements, begin=True, commit=True)[0]
        else:
            with super().transaction(savepoint=False):
                inserted = self._send(statements)[0]
        return {result_id: pk for pk, result_id in inserted.rows}

    def ready_rows_of_last_insert(self, job: Any, now: datetime) -> list[Statement]:
        """The INSERT making ``job`` ready, right after the one-row INSERT of it."""
        sql = (
            f"INSERT INTO {self.tables.ready} (job_id, queue_name, priority, created_at) "
            "VALUES (LAST_INSERT_ID(), %s, %s, %s)"
        )
        return [(sql, [job.queue_name, job.priority, self._datetime(now)])]

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
        if not self._in_own_transaction():
            return super().claim(limit, queue, process_id, worker_id, stamp, resume=resume)
        positions = self.claim_positions if resume else None
        after = None if positions is None else positions.start(queue)
        with self._own_transaction():
            *_, locked = self._send(self.claim_reads(limit, queue, after), begin=True)
            if not locked.rows and positions is not None and positions.rescan(queue, after):
                after = None
                [locked] = self._send([self.lock_ready(limit, queue)])
            claimed = self._claim_locked(locked.rows, process_id, worker_id, stamp)
        if positions is not None:
            positions.record(queue, after, claimed)
        return claimed

    def claim_reads(self, limit: int, queue: Statement, after: Position | None) -> list[Statement]:
        """A resumed claim first reads its higher-priority range backward,
        from the position's end of it, for one row (two pages whatever lies
        past it), and sets ``_HIGHER`` to that row's priority or NULL; its
        locking read (``lock_ready``) includes that range only if there is
        such a row: InnoDB would start the range's forward read with a walk
        over every delete-marked entry a read view keeps before the
        position (claim_position.py)."""
        if after is None:
            return super().claim_reads(limit, queue, after)
        probe, params = self.higher_probe(queue, after)
        where, queue_params = queue
        priority, job_id = after
        # Not lock_ready(after): this read is right only after the probe
        # (lock_ready's own resumed read, a UNION, needs none).
        past = [*queue_params, priority, priority, job_id, priority]
        lock = self.lock_ready(limit, (f"{where} AND {_PAST_POSITION}", past))
        return [(f"SET {_HIGHER} = ({probe})", params), lock]

    def higher_probe(self, queue: Statement, after: Position) -> Statement:
        """The priority of one ready job above ``after``'s, read backward."""
        where, params = queue
        sql = self._probe_texts.get(where)
        if sql is None:
            sql = self._probe_texts[where] = (
                f"SELECT priority FROM {self.tables.ready} WHERE {where} AND priority > %s "
                f"ORDER BY {_CLAIM_ORDER_REVERSED} LIMIT 1"
            )
        return sql, [*params, after[0]]

    @cached_property
    def _probe_texts(self) -> dict[str, str]:
        # Made once per claim filter, as the claim's own (lock_ready).
        return {}

    def finish(self, claim_id: int, job_id: int, now: datetime, return_value: Any) -> bool:
        if not self._in_own_transaction():
            return super().finish(claim_id, job_id, now, return_value)
        with self._own_transaction():
            statements = self._finish_statements(claim_id, job_id, now, return_value)
            taken = self._send(statements, begin=True, commit=True)[0]
        return taken.rowcount == 1

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
        if not self._in_own_transaction():
            return super().finish_and_claim(
                claim_id, job_id, now, return_value, then, stamp, resume=resume
            )
        limit, queue, process_id, worker_id = then
        where, params = queue
        positions = self.claim_positions if resume else None
        after = None if positions is None else positions.start(queue)
        # The claim's reads read nothing unless the finish before them took its claim.
        reads = self.claim_reads(limit, (f"{_TAKEN} = 1 AND {where}", params), after)
        with self._own_transaction():
            statements = [*self._finish_statements(claim_id, job_id, now, return_value), *reads]
            [taken, *_, locked] = self._send(statements, begin=True)
            if taken.rowcount != 1:
                self._send([], commit=True)
                return False, ClaimedRows([], [])
            claimed = self._claim_locked(locked.rows, process_id, worker_id, stamp)
        if positions is not None:
            # No scan again from the head here, as on PostgreSQL: the
            # worker's own claim does it if this one took nothing.
            positions.record(queue, after, claimed)
        return True, claimed

    def finish_all_and_claim(
        self,
        items: Sequence[tuple[int, int, Any]],
        now: datetime,
        then: NextClaimArgs | None,
        stamp: ClaimTime,
        *,
        resume: bool = False,
    ) -> tuple[list[bool], ClaimedRows]:
        if then is None or not self._in_own_transaction():
            return super().finish_all_and_claim(items, now, then, stamp, resume=resume)
        limit, queue, process_id, worker_id = then
        where, params = queue
        positions = self.claim_positions if resume else None
        after = None if positions is None else positions.start(queue)
        finishes: list[Statement] = [(f"SET {_TAKEN_ALL} = 0", [])]
        for claim_id, job_id, return_value in items:
            finishes += self._finish_statements(claim_id, job_id, now, return_value)
            finishes.append((f"SET {_TAKEN_ALL} = {_TAKEN_ALL} + {_TAKEN}", []))
        # The claim's reads read nothing unless a finish took its claim.
        reads = self.claim_reads(limit, (f"{_TAKEN_ALL} > 0 AND {where}", params), after)
        with self._own_transaction():
            sent = self._send([*finishes, *reads], begin=True)
            # Each finish is four statements after the first; its DELETE first.
            taken = [sent[1 + 4 * n].rowcount == 1 for n in range(len(items))]
            if not any(taken):
                self._send([], commit=True)
                return taken, ClaimedRows([], [])
            claimed = self._claim_locked(sent[-1].rows, process_id, worker_id, stamp)
        if positions is not None:
            positions.record(queue, after, claimed)
        return taken, claimed

    def _finish_statements(
        self, claim_id: int, job_id: int, now: datetime, return_value: Any
    ) -> list[Statement]:
        # The fence, and the success recorded only if the fence removed the claim.
        update, params = self.finish_job(job_id, now, return_value)
        taken: Statement = (f"SET {_TAKEN} = ROW_COUNT()", [])
        return [self.delete_claim(claim_id), taken, (f"{update} AND {_TAKEN} = 1", params)]

    def _claim_locked(
        self,
        locked: Sequence[tuple[Any, ...]],
        process_id: int | None,
        worker_id: str,
        stamp: ClaimTime,
    ) -> ClaimedRows:
        """The rest of a claim whose ready rows are locked, and its COMMIT, in one text."""
        if not locked:
            self._send([], commit=True)
            return ClaimedRows([], [])
        now = stamp()
        job_ids = [job_id for _, job_id in locked]
        sql, params, returning = self.insert_claims(job_ids, process_id, now)
        statements = [(sql, params)] if returning else [(sql, params), self.claim_ids(job_ids)]
        # One DELETE per ready row, as ``_delete_ids`` says why.
        ready = f"DELETE FROM {self.tables.ready} WHERE id = %s"
        statements += [(ready, [ready_id]) for ready_id, _ in locked]
        statements += [self.stamp_jobs(job_ids, worker_id, now), self.select_jobs(job_ids)]
        sent = self._send(statements, commit=True)
        claims, jobs = sent[0 if returning else 1], sent[-1]
        return ClaimedRows.of(jobs.columns, jobs.rows, dict(claims.rows), job_ids)

    def _send(
        self, statements: Sequence[Statement], *, begin: bool = False, commit: bool = False
    ) -> list[Sent]:
        """``statements`` in one text (one round trip), each one's outcome;
        START TRANSACTION before them and COMMIT after, in the same text, if asked."""
        text = [*([BEGIN] if begin else []), *statements, *([COMMIT] if commit else [])]
        sent = send(self.connection, text)
        return sent[int(begin) : len(sent) - int(commit)]

    @contextmanager
    def _own_transaction(self) -> Iterator[None]:
        """Around texts that START TRANSACTION and COMMIT themselves: an
        error rolls back whatever of them ran."""
        try:
            yield
        except BaseException:
            self._roll_back()
            raise

    def _execute(self, sql: str) -> None:
        with self.connection.cursor() as cursor:
            cursor.execute(sql)

    def _roll_back(self) -> None:
        # A session that cannot roll back may still hold the transaction and
        # its row locks; closing it makes the server roll back.
        try:
            self._execute("ROLLBACK")
        except DatabaseError as exc:
            # A lost session (killed, server restarted), which the caller's
            # own error reports: one line, no traceback.
            logger.warning(
                "ROLLBACK failed (%s: %s); closing the connection", type(exc).__name__, exc
            )
            self.connection.close()
        except Exception:
            logger.warning("ROLLBACK failed; closing the connection", exc_info=True)
            self.connection.close()

    def _delete_ids(self, cursor: CursorWrapper, table: str, pks: Sequence[Any]) -> None:
        # A multi-row DELETE may scan the table when statistics are stale
        # and wait on rows other claimers locked: a deadlock. One statement
        # per primary key always uses the primary key.
        cursor.executemany(f"DELETE FROM {table} WHERE id = %s", [(pk,) for pk in pks])

    def insert_ignoring_duplicates(self, table: str, values: str) -> str:
        return f"INSERT IGNORE INTO {table} {values}"

    def _adding(self, table: str, keys: list[str], added: list[str]) -> str:
        sets = ", ".join(f"{c} = {c} + VALUES({c})" for c in added)
        return f" ON DUPLICATE KEY UPDATE {sets}"

    def error_code(self, exc: BaseException) -> int | None:
        # Django's wrapper keeps the driver's args: (code, message).
        code = exc.args[0] if exc.args else None
        return code if isinstance(code, int) else None

    def _lock_conflict_of(self, error: BaseException) -> str | None:
        code = self.error_code(error)
        return None if code is None else _LOCK_CONFLICTS.get(code)

    def _lacks_schema(self, error: BaseException) -> bool:
        return self.error_code(error) in _MISSING_SCHEMA

    def refuses_value(self, exc: BaseException, stored: Any) -> bool:
        # A statement over max_allowed_packet gets 1153, or the server drops
        # the connection and the client reports 2006/2013.
        code = self.error_code(exc)
        if code == _PACKET_TOO_LARGE:
            return True
        return code in _CONNECTION_LOST and self._is_over_packet_limit(stored)

    def _is_over_packet_limit(self, stored: Any) -> bool:
        """Whether ``stored`` alone fills the server's max_allowed_packet,
        asked on a connection replaced if the error broke it."""
        connection = self.connection
        try:
            if not connection.in_atomic_block and not (
                connection.connection is not None and connection.is_usable()
            ):
                connection.close()
            with connection.cursor() as cursor:
                cursor.execute("SELECT @@max_allowed_packet")
                (limit,) = cursor.fetchone()
        except DatabaseError:
            return False  # The server is unreachable: a real outage.
        return len(json.dumps(stored)) + _PACKET_MARGIN >= int(limit)

    sees_transactions: ClassVar[bool] = True

    def oldest_transaction(self) -> OpenTransaction | None:
        with self.connection.cursor() as cursor:
            cursor.execute(MYSQL_OLDEST_TRANSACTION)
            row = cursor.fetchone()
        if row is None:
            return None
        age, session, database, state, query = row
        return OpenTransaction(float(age), int(session), str(database), str(state), str(query))

    def purge_backlog(self) -> int | None:
        # MariaDB's status variable, else MySQL 8's metric; None if neither reads.
        for sql in MYSQL_HISTORY_LENGTH:
            try:
                with self.connection.cursor() as cursor:
                    cursor.execute(sql)
                    row = cursor.fetchone()
            except DatabaseError:
                continue
            if row is not None:
                return int(row[-1])
        return None
