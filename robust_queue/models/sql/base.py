"""The verbs every dialect answers, and how most databases carry them out.

A claim here is a short transaction of a few statements: lock ready rows
(``FOR UPDATE SKIP LOCKED`` where rows can be locked), insert their claims,
delete the ready rows by primary key, stamp the jobs, read them back. A
finish deletes the claim (the fence) and records the job's success. A
vendor's dialect overrides what it does its own way. Dialects run
statements and return rows and ids; the models make instances of them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from threading import Event
from typing import Any, ClassVar, cast

from django.db import DatabaseError, NotSupportedError, transaction
from django.db.backends.utils import CursorWrapper

from .claim_position import ClaimPositions, Position
from .finish_probe import FinishProbe
from .server_state import DeadRows, OpenTransaction
from .statements import Statement, Statements, marks, queue_filter

# A claim's time, taken when first called (a ``claims_in_doubt.Stamp``).
ClaimTime = Callable[[], datetime]
# The claim a finish makes next: (limit, queue, process id, worker id).
NextClaimArgs = tuple[int, Statement, int | None, str]


@dataclass(frozen=True, slots=True)
class ClaimedRows:
    """Claimed jobs as plain rows of the job table, in claim order."""

    columns: list[str]
    # (claim id, the job's row) per claimed job.
    rows: list[tuple[int, tuple[Any, ...]]]

    @classmethod
    def of(
        cls,
        columns: list[str],
        jobs: Iterable[Sequence[Any]],
        claim_ids: dict[int, int],
        job_ids: Sequence[int],
    ) -> ClaimedRows:
        """``jobs`` (rows of the job table) with their ``claim_ids`` (by
        job id), in the order of ``job_ids``."""
        at = columns.index("id")
        rows = {row[at]: tuple(row) for row in jobs}
        return cls(columns, [(claim_ids[job_id], rows[job_id]) for job_id in job_ids])


class Dialect(Statements):
    """What Robust Queue asks of one database connection (``dialect_for``)."""

    # (read the session's lock wait, set it to the parameter), if any.
    _LOCK_WAIT: ClassVar[tuple[str, str] | None] = None
    # Whether ``listen`` can tell an idle worker that jobs became ready.
    supports_listen: ClassVar[bool] = False
    # Whether a worker's claim starts after its last one (claim_position.py):
    # where deleted rows leave index entries that open transactions keep.
    resumes_claims: ClassVar[bool] = True

    def transaction(self, *, savepoint: bool = True) -> AbstractContextManager[None]:
        """One transaction around plain statements on this connection.

        The body must not open ``atomic()`` or register ``on_commit`` hooks
        (MySQL's own transaction would commit early, or run them at once).
        Inside a caller's transaction ``savepoint=False`` joins it without a
        savepoint: an error in the body then dooms the caller's transaction.
        """
        return transaction.atomic(using=self.alias, savepoint=savepoint)

    def insert_ready(self, jobs: Sequence[Any], now: datetime) -> dict[str, int] | None:
        """Insert due, unlimited ``jobs`` and make them ready, in one
        transaction of plain INSERTs: {result id: job id}. None: this
        server cannot return the ids it inserts (MySQL); the caller inserts
        them its own way."""
        if not self.connection.features.can_return_rows_from_bulk_insert:
            return None
        ids: dict[str, int] = {}
        # No savepoint: inside the caller's transaction a failure dooms it
        # anyway, and a savepoint costs two round trips.
        with self.transaction(savepoint=False), self.connection.cursor() as cursor:
            for sql, params in self.insert_jobs(jobs):
                cursor.execute(sql, params)
                ids.update((result_id, pk) for pk, result_id in cursor.fetchall())
            for sql, params in self.insert_ready_rows(jobs, ids, now):
                cursor.execute(sql, params)
        return ids

    def notify(self, queue_names: Collection[str]) -> None:
        """Wake idle listeners of ``queue_names`` when the transaction commits."""

    def notify_finished(self, result_id: str) -> None:
        """Wake the waiters of an awaited job that ended (``finish_probe.py``)."""

    def finish_probe(self, result_id: str) -> FinishProbe:
        """A probe of the end of job ``result_id`` on a connection of its
        own; the caller closes it."""
        return FinishProbe(self, result_id)

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
        """Claim up to ``limit`` ready jobs that match ``queue``, atomically.

        ``stamp`` gives the claim's time (its rows' ``created_at``, the
        jobs' start): called once the claim holds its rows, so it is later
        than the commit of every job it claims. ``resume``: start after
        this connection's last claim of ``queue`` (``claim_position.py``).
        """
        with self.transaction():
            return self.claim_in_transaction(
                limit, queue, process_id, worker_id, stamp, resume=resume
            )

    def claim_in_transaction(
        self,
        limit: int,
        queue: Statement,
        process_id: int | None,
        worker_id: str,
        stamp: ClaimTime,
        *,
        resume: bool = False,
    ) -> ClaimedRows:
        """``claim`` inside the caller's ``transaction()``."""
        if not (resume and self.resumes_claims):
            return self._claim_locking(limit, queue, None, process_id, worker_id, stamp)
        positions = self.claim_positions
        after = positions.start(queue)
        claimed = self._claim_locking(limit, queue, after, process_id, worker_id, stamp)
        if not claimed.rows and positions.rescan(queue, after):
            after = None
            claimed = self._claim_locking(limit, queue, None, process_id, worker_id, stamp)
        positions.record(queue, after, claimed)
        return claimed

    @cached_property
    def claim_positions(self) -> ClaimPositions:
        """Where this connection's claims ended, by claim filter."""
        return ClaimPositions()

    def _claim_locking(
        self,
        limit: int,
        queue: Statement,
        after: Position | None,
        process_id: int | None,
        worker_id: str,
        stamp: ClaimTime,
    ) -> ClaimedRows:
        with self.connection.cursor() as cursor:
            for statement in self.claim_reads(limit, queue, after):
                cursor.execute(*statement)
            locked = cursor.fetchall()
            if not locked:
                return ClaimedRows([], [])
            # The rows are locked (SQLite: the whole database, since BEGIN).
            now = stamp()
            job_ids = [job_id for _, job_id in locked]
            claim_ids = self._insert_claims(cursor, job_ids, process_id, now)
            self._delete_ids(cursor, self.tables.ready, [ready_id for ready_id, _ in locked])
            cursor.execute(*self.stamp_jobs(job_ids, worker_id, now))
            cursor.execute(*self.select_jobs(job_ids))
            columns = [column[0] for column in cursor.description]
            return ClaimedRows.of(columns, cursor.fetchall(), claim_ids, job_ids)

    def finish(self, claim_id: int, job_id: int, now: datetime, return_value: Any) -> bool:
        """Delete the claim and record success on its job; False (and
        nothing written) if the claim was already gone."""
        with self.transaction():
            if not self.take_claim(claim_id):
                return False
            with self.connection.cursor() as cursor:
                cursor.execute(*self.finish_job(job_id, now, return_value))
        return True

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
        """``finish``, and only if it finished, ``claim`` in the same
        transaction: ``then`` is the claim's (limit, queue, process id,
        worker id), ``stamp`` its time and ``resume`` its start (``claim``).
        One commit per job instead of two."""
        items = [(claim_id, job_id, return_value)]
        [finished], claimed = self.finish_all_and_claim(items, now, then, stamp, resume=resume)
        return finished, claimed

    def finish_all_and_claim(
        self,
        items: Sequence[tuple[int, int, Any]],
        now: datetime,
        then: NextClaimArgs | None,
        stamp: ClaimTime,
        *,
        resume: bool = False,
    ) -> tuple[list[bool], ClaimedRows]:
        """``finish`` each (claim id, job id, return value) and, if any
        finished, ``claim`` ``then``'s in one transaction; whether each
        finished, and what was claimed. One commit for them all."""
        with self.transaction():
            finished = []
            for claim_id, job_id, return_value in items:
                taken = self.take_claim(claim_id)
                if taken:
                    with self.connection.cursor() as cursor:
                        cursor.execute(*self.finish_job(job_id, now, return_value))
                finished.append(taken)
            if then is None or not any(finished):
                return finished, ClaimedRows([], [])
            return finished, self.claim_in_transaction(*then, stamp, resume=resume)

    def claim_filter(
        self, queue_name: str | None, excluded: Sequence[str], paused_tasks: Sequence[str] | None
    ) -> Statement:
        """The claim's WHERE clause: the queues (``queue_filter``) and the
        guards against paused queues and tasks (``queue_pause_filter``,
        ``task_pause_filter``)."""
        where, params = queue_filter(queue_name, excluded)
        paused, paused_params = self.queue_pause_filter(queue_name, excluded)
        tasks = self.task_pause_filter(paused_tasks)
        return f"{where} AND {paused} AND {tasks}", [*params, *paused_params]

    def take_claim(self, claim_id: int) -> bool:
        """Delete a claim; True only for the statement that removed it."""
        with self.connection.cursor() as cursor:
            cursor.execute(*self.delete_claim(claim_id))
            # Django's cursor wrapper passes rowcount through untyped (an int per DB-API).
            return cast(int, cursor.rowcount) == 1

    def take_claim_to_run_again(self, claim_id: int) -> bool | None:
        """Delete a claim whose job goes back to run (a retry, a release,
        a snooze) unless its cancel was requested: True if this statement
        removed it, False if it was gone, None if a request holds it.

        The request is read by the DELETE itself, under the row lock a
        concurrent cancel's UPDATE takes too, so a request stored after a
        caller's earlier read cannot be lost with the claim.
        """
        with self.connection.cursor() as cursor:
            cursor.execute(*self.delete_uncancelled_claim(claim_id))
            if cast(int, cursor.rowcount) == 1:
                return True
            cursor.execute(*self.claim_exists(claim_id))
            return None if cursor.fetchone() else False

    def delete_ids(self, table: str, pks: Sequence[Any]) -> None:
        """Delete rows of ``table`` (unquoted) by primary key."""
        if pks:
            with self.connection.cursor() as cursor:
                self._delete_ids(cursor, self.connection.ops.quote_name(table), pks)

    def _delete_ids(self, cursor: CursorWrapper, table: str, pks: Sequence[Any]) -> None:
        cursor.execute(f"DELETE FROM {table} WHERE id IN ({marks(pks)})", list(pks))

    def _insert_claims(
        self, cursor: CursorWrapper, job_ids: Sequence[int], process_id: int | None, now: datetime
    ) -> dict[int, int]:
        sql, params, returning = self.insert_claims(job_ids, process_id, now)
        cursor.execute(sql, params)
        if not returning:
            cursor.execute(*self.claim_ids(job_ids))
        return dict(cursor.fetchall())

    def upsert_target(self, fields: list[str]) -> list[str] | None:
        """``bulk_create(unique_fields=...)`` for an upsert: None where the
        database takes no conflict target (MySQL's ON DUPLICATE KEY)."""
        return fields if self.connection.features.supports_update_conflicts_with_target else None

    @property
    def locks_joined_rows(self) -> bool:
        """Whether a locking read may join other tables: it can lock its
        own table's rows only (``FOR UPDATE OF``), or locks nothing at all.
        MariaDB cannot, and locking both tables deadlocks concurrent claimers."""
        features = self.connection.features
        return bool(features.has_select_for_update_of or not features.has_select_for_update)

    @property
    def lock_of(self) -> tuple[str, ...]:
        """``select_for_update(of=...)`` that locks the queried table only."""
        return ("self",) if self.connection.features.has_select_for_update_of else ()

    @contextmanager
    def lock_wait(self, seconds: int) -> Iterator[None]:
        """Row-lock waits inside fail after ``seconds`` (SQLite: no change)."""
        if self._LOCK_WAIT is None:
            yield
            return
        read, write = self._LOCK_WAIT
        with self.connection.cursor() as cursor:
            cursor.execute(read)
            [previous] = cursor.fetchone()
            cursor.execute(write, [self._lock_wait_value(seconds)])
        try:
            yield
        finally:
            try:
                with self.connection.cursor() as cursor:
                    cursor.execute(write, [previous])
            except DatabaseError:
                # The session is gone (the error inside says why); its
                # replacement starts with the server's setting.
                pass

    def _lock_wait_value(self, seconds: int) -> Any:
        return seconds

    def listen(
        self, stop: Event, on_notify: Callable[[], None], on_listening: Callable[[], None]
    ) -> None:
        """Call ``on_notify`` per ready notification until ``stop`` is set;
        ``on_listening`` once the LISTEN is in place."""
        raise NotSupportedError(f"{self.connection.display_name} has no LISTEN.")

    def error_code(self, exc: BaseException) -> int | None:
        """The server's numeric error code of ``exc``, where it has them."""
        return None

    def lock_conflict(self, exc: BaseException) -> str | None:
        """``"deadlock"`` or ``"lock wait timeout"`` if ``exc`` is one, else
        None. Such a transaction lost and was rolled back: nothing of it is
        half-done (``deadlocks.retry_on_lock_conflict``)."""
        if not isinstance(exc, DatabaseError):
            return None
        # Django's wrapper or the driver's error it keeps as the cause.
        for error in (exc, exc.__cause__):
            kind = None if error is None else self._lock_conflict_of(error)
            if kind is not None:
                return kind
        return None

    def refused_as_locked(self, exc: BaseException) -> bool:
        """Whether ``exc`` is a write refused because another session holds
        the whole database's write lock (SQLite's "database is locked");
        row-locking servers never refuse so."""
        return False

    def write_lock_holder(self) -> int | None:
        """The pid of the process holding the database's one write lock,
        where there is one and it can be told (SQLite on Linux)."""
        return None

    def _lock_conflict_of(self, error: BaseException) -> str | None:
        # SQLite has no row locks: its busy database is no lock conflict.
        return None

    def lacks_schema(self, exc: BaseException) -> bool:
        """Whether ``exc`` says a table or a column is missing: the queue's
        migrations are not applied to this database. Read only after a
        statement failed, never on the way to one."""
        if not isinstance(exc, DatabaseError):
            return False
        return any(e is not None and self._lacks_schema(e) for e in (exc, exc.__cause__))

    def _lacks_schema(self, error: BaseException) -> bool:
        return False

    def refuses_value(self, exc: BaseException, stored: Any) -> bool:
        """Whether ``exc``, raised writing ``stored``, is the server refusing
        that value for good (a retry writes it again), though its class
        says transient. ``stored`` is JSON-serialisable."""
        return False

    # Whether the server shows other sessions' open transactions (not
    # SQLite: one file, whose readers hold back nothing the queue needs).
    sees_transactions: ClassVar[bool] = False

    def dead_rows(self, tables: Sequence[str]) -> list[DeadRows] | None:
        """Live and dead rows of ``tables`` (unquoted names) by the server's
        statistics; None where the database keeps no such count
        (``server_state.py``)."""
        return None

    def oldest_transaction(self) -> OpenTransaction | None:
        """The oldest transaction open on the server but this session's;
        None if there is none (or ``sees_transactions`` is False)."""
        return None

    def purge_backlog(self) -> int | None:
        """Old row versions the server still keeps for open transactions
        (InnoDB's history list length); None where it has no such count or
        this session may not read it."""
        return None
