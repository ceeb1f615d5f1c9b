"""A job a worker is running; finalizing it is fenced by this row's lock."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from django.db import DatabaseError, models, transaction
from django.utils import timezone

from .. import conf, signals
from ..attempt_history import stamped
from ..exceptions import JobCancelledError, TaskTimeoutError
from ..statistics import record_attempt
from .blocked_execution import BlockedExecution
from .clock import database_now
from .error_record import error_record, stored_errors
from .execution import Execution, job_field
from .failed_execution import FailedExecution
from .job import Job
from .process import Process
from .rows import instances
from .sql import ClaimedRows, dialect_for

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
        cls, using: str, claimed: ClaimedRows, process_id: int | None, now: datetime
    ) -> list[ClaimedExecution]:
        """Claims (with their jobs) of rows a dialect claimed."""
        jobs = instances(Job, using, claimed.columns, [row for _, row in claimed.rows])
        fields = _claim_fields()
        rows = []
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
            if not self._finish_and_claim(using, now, return_value, then):
                return False
        elif not self._finish_rows(using, now, return_value):
            return False
        self.job.finished_at = now
        self.job.return_value = return_value
        record_attempt(self.job, using=using, outcome="finished", at=now)
        self._release_slot(using)
        return True

    def _finish_and_claim(
        self, using: str, now: datetime, return_value: Any, then: NextClaim
    ) -> bool:
        dialect = dialect_for(using)
        queue = dialect.claim_filter(then.queue_name, then.exclude_queues, then.paused_tasks)
        finished, claimed = dialect.finish_and_claim(
            self.pk, self.job_id, now, return_value, (1, queue, then.process_id, then.worker_id)
        )
        then.claimed = ClaimedExecution.from_claimed_rows(using, claimed, then.process_id, now)
        return finished

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
            if not self._take(using):
                return False
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
        self.job.errors = job.errors
        outcome = "failed" if retry_in is None else "retried"
        record_attempt(self.job, using=using, outcome=outcome)
        self._release_slot(using)
        if retry_in is not None:
            signals.job_retried.send(sender=Job, job=job, retry_at=job.run_after, error=error)
        _send_stopped(job, error)
        return True

    def fail_cancelled(self) -> bool:
        """Record the job as cancelled (``JobCancelledError``, no retry)."""
        exc = JobCancelledError(f"Job {self.job.result_id} was cancelled while running.")
        return self.fail(error_record(exc))

    def release(self) -> bool:
        """Give the job back to ready without counting a failure.

        A job asked to cancel is failed as cancelled instead.
        """
        using = self._state.db or "default"
        if self._cancel_was_requested(using):
            return self.fail_cancelled()
        with transaction.atomic(using=using):
            if not self._take(using):
                return False
            # The job keeps the concurrency slot it was claimed with.
            Job.objects.using(using).dispatch_all(
                [self.job], immediately=True, bypass_concurrency=True
            )
        return True

    def _cancel_was_requested(self, using: str) -> bool:
        # Read again: a claim made by a worker has this field deferred, and
        # the request may have come since.
        rows = ClaimedExecution.objects.using(using).filter(pk=self.pk)
        return rows.filter(cancel_requested_at__isnull=False).exists()

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
