"""A job a worker is running; finalizing it is fenced by this row's lock."""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from django.db import DatabaseError, models, transaction
from django.utils import timezone

from .. import conf, signals
from ..exceptions import JobCancelledError, TaskTimeoutError
from . import claims_in_doubt
from .attempt_history import ATTEMPT, WORKER_ID, stamped, stored_worker_ids
from .blocked_execution import BlockedExecution
from .claims_in_doubt import Stamp, claiming
from .clock import database_now
from .error_record import error_record, stored_errors
from .execution import Execution, job_field
from .failed_execution import FailedExecution
from .job import Job
from .process import Process
from .rows import instances
from .sql import ClaimedRows, dialect_for
from .sql.base import Dialect, NextClaimArgs
from .statistics import record_attempt, record_jobs

logger = logging.getLogger(__name__)


class ClaimedExecutionQuerySet(models.QuerySet["ClaimedExecution"]):
    def orphaned(self) -> ClaimedExecutionQuerySet:
        """Claims whose process is no longer registered."""
        live = Process.objects.using(self.db).filter(pk=models.OuterRef("process_id"))
        return self.filter(~models.Exists(live))

    def release_all(self) -> int:
        """Put every claim of this queryset back to ready.

        A claim whose job was asked to cancel is failed instead (with
        ``JobCancelledError``): the request outlives its worker.
        """
        return sum(claimed.release() for claimed in self.select_related("job"))

    def release_in_doubt(self, process_id: int, keep: Collection[int] = ()) -> int:
        """Give back the claims of ``process_id`` whose answer was lost
        (``claims_in_doubt``): the process never received them. ``keep``:
        the claims (pks) it holds, which are never given back."""
        released = 0
        for stamp in claims_in_doubt.noted(self.db, process_id):
            rows = self.filter(process_id=process_id, created_at=stamp).exclude(pk__in=keep)
            released += rows.release_all()
            claims_in_doubt.forget(self.db, process_id, stamp)
        return released

    def fail_all_with(self, error_class: type[BaseException], message: str) -> int:
        """Fail every claim of this queryset with one error, e.g. a crash.

        The task's retry policy decides whether the job runs again; a job
        asked to cancel fails with ``JobCancelledError``, never retried.
        """
        exc = error_class(message)
        error = error_record(exc)
        failed = 0
        for claimed in self.select_related("job"):
            if claimed.cancel_requested_at is not None:
                failed += claimed.fail_cancelled()
            else:
                failed += claimed.fail(error, claimed.job.retry_in(exc))
        return failed


_STOPPED = {
    f"{JobCancelledError.__module__}.{JobCancelledError.__qualname__}": signals.job_cancelled,
    f"{TaskTimeoutError.__module__}.{TaskTimeoutError.__qualname__}": signals.job_timed_out,
}


def _send_stopped(job: Job, error: dict[str, str]) -> None:
    """``job_cancelled`` / ``job_timed_out`` for an attempt that ended so."""
    signal = _STOPPED.get(error.get("exception_class_path", ""))
    if signal is not None:
        signal.send(sender=Job, job=job, error=error)


@cache
def _claim_fields() -> list[str]:
    """The columns a claim is built from, in the model's field order
    (``from_db()`` maps values by that order, whatever the names' order)."""
    known = ("id", "job_id", "process_id", "created_at")
    return [f.attname for f in ClaimedExecution._meta.concrete_fields if f.attname in known]


@dataclass(eq=False)
class NextClaim:
    """The job a worker thread claims for itself as it finishes one.

    Passed to ``ClaimedExecution.finish``: the finish and this claim go to
    the database together (one statement on PostgreSQL, one transaction
    elsewhere), and only if the finish went through. ``claimed`` holds what
    it claimed (at most one job).
    """

    queue_name: str | None
    exclude_queues: tuple[str, ...]
    paused_tasks: tuple[str, ...] | None
    process_id: int
    worker_id: str
    claimed: list[ClaimedExecution] = field(default_factory=list)
    # Start after this thread's last claim (sql/claim_position.py).
    resume: bool = False
    # How many jobs to claim: one per thread that the finish frees.
    limit: int = 1

    def args(self, dialect: Dialect) -> NextClaimArgs:
        """The claim as a dialect takes it: (limit, queue filter, process
        id, worker id)."""
        queue = dialect.claim_filter(self.queue_name, self.exclude_queues, self.paused_tasks)
        return (self.limit, queue, self.process_id, self.worker_id)


class ClaimedExecution(Execution):
    job = job_field("claimed_execution")
    # No constraint: a claim outlives its process row until it is failed.
    process = models.ForeignKey(
        "robust_queue.Process",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="claimed_executions",
    )
    # Set by cancel(): the worker stops the job; stored, so the request
    # outlives a worker that dies meanwhile.
    cancel_requested_at = models.DateTimeField(null=True, blank=True)

    objects = ClaimedExecutionQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_claimed_execution"
        indexes = [
            models.Index(fields=["process", "job"], name="rq_claimed_process"),
        ]

    @classmethod
    def from_claimed_rows(
        cls, using: str, claimed: ClaimedRows, process_id: int | None, stamp: Stamp
    ) -> list[ClaimedExecution]:
        """Claims (with their jobs) of rows a dialect claimed with ``stamp``."""
        if not claimed.rows:
            return []
        jobs = instances(Job, using, claimed.columns, [row for _, row in claimed.rows])
        fields = _claim_fields()
        rows = []
        now = stamp()
        for (claim_id, _), job in zip(claimed.rows, jobs, strict=True):
            values = {"id": claim_id, "job_id": job.pk, "process_id": process_id, "created_at": now}
            row = cls.from_db(using, fields, [values[name] for name in fields])
            row.job = job
            rows.append(row)
        return rows

    def finish(self, return_value: Any, then: NextClaim | None = None) -> bool:
        """Record success once; False if the claim is already gone.

        ``then``: claim this thread's next job with the same commit, if
        the finish goes through (``NextClaim``).
        """
        using = self._state.db or "default"
        now = timezone.now()
        if then is not None and conf.preserve_finished_jobs():
            with claiming(using, then.process_id) as stamp:
                finished, rows = self._finish_and_claim(using, now, return_value, then, stamp)
                claimed = ClaimedExecution.from_claimed_rows(using, rows, then.process_id, stamp)
            # Handed over only once nothing of the claim can raise.
            then.claimed = claimed
            if not finished:
                return False
        elif not self._finish_rows(using, now, return_value):
            return False
        self._finished(using, now, return_value)
        return True

    @classmethod
    def finish_all(
        cls, outcomes: Sequence[tuple[ClaimedExecution, Any]], then: NextClaim | None = None
    ) -> list[bool]:
        """``finish`` each (claim, return value) with one commit; whether
        each went through (False: that claim was already gone).

        ``then``: claim jobs with the same commit (``NextClaim``: up to its
        ``limit``), if any finish went through. Each finish is fenced by
        its own claim, as ``finish``'s; kept finished jobs only
        (``preserve_finished_jobs``), which the caller checks.
        """
        using = outcomes[0][0]._state.db or "default"
        now = timezone.now()
        dialect = dialect_for(using)
        items = [(claimed.pk, claimed.job_id, value) for claimed, value in outcomes]
        claim = None if then is None else then.args(dialect)
        with claiming(using, None if then is None else then.process_id) as stamp:
            resume = then is not None and then.resume
            finished, rows = dialect.finish_all_and_claim(items, now, claim, stamp, resume=resume)
            if then is not None:
                claimed = cls.from_claimed_rows(using, rows, then.process_id, stamp)
        if then is not None:
            then.claimed = claimed
        for (claimed_one, value), done in zip(outcomes, finished, strict=True):
            if done:
                claimed_one._finished(using, now, value)
        return finished

    def _finished(self, using: str, now: datetime, return_value: Any) -> None:
        """What follows a finish's commit, in this process."""
        self.job.finished_at = now
        self.job.return_value = return_value
        record_attempt(self.job, using=using, outcome="finished", at=now)
        self._release_slot(using)

    def finish_landed(self, return_value: Any) -> bool:
        """Whether a finish whose answer was lost committed, its claim now
        being gone; if so, what follows it happens here (``finalizing``).

        Only the claim's holder marks its job successful (a prune, a crash
        or a cancel fails it), so a finished job is this finish's; a job
        not kept after finishing (``preserve_finished_jobs`` off) is gone.
        """
        using = self._state.db or "default"
        rows = Job.objects.using(using).filter(pk=self.job_id)
        found = list(rows.values_list("finished_at", flat=True))  # [], [None] or [when]
        if not conf.preserve_finished_jobs():
            if found:
                return False
            finished_at = timezone.now()
        elif not found or found[0] is None:
            return False
        else:
            finished_at = found[0]
        self._finished(using, finished_at, return_value)
        return True

    def _finish_and_claim(
        self, using: str, now: datetime, return_value: Any, then: NextClaim, stamp: Stamp
    ) -> tuple[bool, ClaimedRows]:
        dialect = dialect_for(using)
        claim = then.args(dialect)
        return dialect.finish_and_claim(
            self.pk, self.job_id, now, return_value, claim, stamp, resume=then.resume
        )

    def _finish_rows(self, using: str, now: datetime, return_value: Any) -> bool:
        if conf.preserve_finished_jobs():
            return dialect_for(using).finish(self.pk, self.job_id, now, return_value)
        with transaction.atomic(using=using):
            if not self._take(using):
                return False
            Job.objects.using(using).filter(pk=self.job_id).delete()
        return True

    def fail(self, error: dict[str, str], retry_in: timedelta | None = None) -> bool:
        """Record one failed attempt once; run the job again ``retry_in``
        from now by the database's clock, if given."""
        using = self._state.db or "default"
        with transaction.atomic(using=using):
            taken = self._take(using) if retry_in is None else self._take_to_run_again(using)
            if taken:
                job = self._record_failure(using, error, retry_in)
        if taken is None:
            # Its cancel was requested since the worker last looked: it
            # does not run again.
            return self.fail_cancelled()
        if not taken:
            return False
        if retry_in is None and job.awaited:
            dialect_for(using).notify_finished(job.result_id)
        self._failed(using, job, error, retry_in)
        return True

    def _failed(
        self, using: str, job: Job, error: dict[str, str], retry_in: timedelta | None
    ) -> None:
        """What follows a failure's commit, in this process."""
        self.job.errors = job.errors
        outcome = "failed" if retry_in is None else "retried"
        record_attempt(self.job, using=using, outcome=outcome)
        self._release_slot(using)
        if retry_in is not None:
            signals.job_retried.send(sender=Job, job=job, retry_at=job.run_after, error=error)
        _send_stopped(job, error)

    def fail_landed(self, error: dict[str, str], retry_in: timedelta | None = None) -> bool:
        """Whether a ``fail`` whose answer was lost committed, its claim
        now being gone; if so, what follows it happens here.

        The job then holds this attempt's record of this error (its
        number, worker and error, ``stamped``): a prune or a crash records
        another error, a cancel ``JobCancelledError``.
        """
        using = self._state.db or "default"
        job = Job.objects.using(using).filter(pk=self.job_id).first()
        if job is None:
            return False
        mine = stamped(error, self.job)
        keys = (ATTEMPT, WORKER_ID, "exception_class_path", "traceback")
        if not any(
            isinstance(record, dict) and all(record.get(k) == mine.get(k) for k in keys)
            for record in stored_errors(job.errors)
        ):
            return False
        self._failed(using, job, error, retry_in)
        return True

    def _record_failure(self, using: str, error: dict[str, str], retry_in: timedelta | None) -> Job:
        """The job's side of ``fail``, in its transaction, once the claim is taken."""
        job = Job.objects.using(using).select_for_update().get(pk=self.job_id)
        # The attempt's own start and end go with its error (admin).
        record = stamped(error, job)
        job.errors = [*stored_errors(job.errors), record]
        if retry_in is None:
            job.save(update_fields=["errors"])
            FailedExecution.objects.using(using).create(job=job, error=record)
        else:
            # The clock the dispatcher compares due times with, not
            # this host's: a worker whose clock is off would retry
            # too early or too late.
            now = database_now(using)
            job.run_after = now + retry_in
            job.save(update_fields=["errors", "run_after"])
            Job.objects.using(using).dispatch_all([job], now=now)
        return job

    def fail_cancelled(self) -> bool:
        """Record the job as cancelled (``JobCancelledError``, no retry)."""
        exc = JobCancelledError(f"Job {self.job.result_id} was cancelled while running.")
        return self.fail(error_record(exc))

    def release(self, *, started: bool = True) -> bool:
        """Give the job back to ready without counting a failure.

        A job asked to cancel is failed as cancelled instead. ``started``
        False: its body never ran (claimed as the worker stopped), so this
        claim does not count as an attempt: its worker id is taken off.
        """
        using = self._state.db or "default"
        with transaction.atomic(using=using):
            taken = self._take_to_run_again(using)
            if taken and not started:
                self._uncount(using)
            if taken:
                # The job keeps the concurrency slot it was claimed with.
                Job.objects.using(using).dispatch_all(
                    [self.job], immediately=True, bypass_concurrency=True
                )
        if taken is None:
            return self.fail_cancelled()
        if taken:
            # Neither an attempt's outcome nor a failure: its own counter.
            record_jobs([(self.job.queue_name, self.job.task_path)], using=using, column="released")
        return taken

    def _uncount(self, using: str) -> None:
        """Take this claim's worker id off its job (the last one: the
        claim appended it, and the job has been this claim's since)."""
        worker_ids = stored_worker_ids(self.job.worker_ids)[:-1]
        Job.objects.using(using).filter(pk=self.job_id).update(worker_ids=worker_ids)
        self.job.worker_ids = worker_ids

    def _release_slot(self, using: str) -> None:
        # After commit: a failure here must not undo the finalization;
        # concurrency maintenance releases what is left blocked.
        try:
            BlockedExecution.objects.using(using).release_slot_of(self.job)
        except DatabaseError:
            logger.exception("Releasing the concurrency slot of job %s failed", self.job_id)

    def _take(self, using: str) -> bool:
        """Delete this claim; True only for the transition that removed it.

        The DELETE locks the row: a concurrent finalize, release or prune
        waits, then deletes nothing, so exactly one of them goes on. Plain
        SQL: nothing refers to a claim, so Django's delete collector (its
        most expensive statement here) has nothing to do.
        """
        return dialect_for(using).take_claim(self.pk)

    def _take_to_run_again(self, using: str) -> bool | None:
        """``_take`` for a transition that puts the job back to run: None
        (nothing taken) if its cancel was requested, which the caller then
        records as ``fail_cancelled`` instead (``Dialect.take_claim_to_run_again``).
        """
        return dialect_for(using).take_claim_to_run_again(self.pk)
