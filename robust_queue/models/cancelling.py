"""Cancelling one job: the transition behind ``Job.cancel()``.

A waiting job (ready, scheduled, blocked) leaves its queue and ends FAILED
with ``JobCancelledError`` in one transaction; it is counted in the
statistics' discarded/cancelled column, and a ready job gives its
concurrency slot back after commit. A running job gets a stored request
(``ClaimedExecution.cancel_requested_at``) that its worker acts on; its
attempt, when it ends, is counted as a failed attempt like any other
(``ClaimedExecution.fail``), not here.

Below ``job.py``: the job is a ``JobRow``; its table and the execution
tables are reached through it (``job_manager``, its reverse one-to-one
fields: ``job_state.execution_manager``), never imported.
"""

from __future__ import annotations

import enum
from typing import Any

from django.db import models, transaction
from django.utils import timezone

from .. import signals
from ..compat import TaskResultDoesNotExist
from ..exceptions import JobCancelledError, NotCancellableError
from .attempt_history import ATTEMPT
from .error_record import error_record, stored_errors
from .job_row import JobRow, job_manager, until_settled
from .job_state import WAITING_STATES, JobState, execution_manager
from .locking import delete_by_pk, lock_by_pk
from .statistics import record_jobs


class CancelOutcome(enum.Enum):
    CANCELLED = "cancelled"  # it was waiting: it is FAILED now
    REQUESTED = "requested"  # it is running: its worker stops it


def cancel_job(job: JobRow) -> CancelOutcome:
    """Cancel ``job``: see ``Job.cancel()``."""
    using = job._state.db or "default"
    gave_up = NotCancellableError(
        f"Job {job.result_id} kept changing state; try cancelling it again."
    )
    outcome, cancelled, holds_slot = until_settled(
        lambda: _cancel_once(job, using), using, "Cancel", gave_up
    )
    if outcome is CancelOutcome.CANCELLED:
        _after_cancel(cancelled, using, holds_slot)
    return outcome


def _after_cancel(job: JobRow, using: str, holds_slot: bool) -> None:
    # After commit: none of this may undo the cancel.
    record_jobs([(job.queue_name, job.task_path)], using=using, column="discarded")
    if holds_slot:
        execution_manager(job._meta.model, JobState.BLOCKED, using).release_slot_of(job)
    signals.job_cancelled.send(sender=type(job), job=job, error=job.errors[-1])


def _cancel_once(job: JobRow, using: str) -> tuple[CancelOutcome, JobRow, bool] | None:
    """One try in one transaction: the outcome, the job as it is now, and
    whether it held a slot; None if the job moved meanwhile."""
    jobs = job_manager(job, using)
    with transaction.atomic(using=using):
        for state in WAITING_STATES:
            manager = execution_manager(job._meta.model, state, using)
            locked = lock_by_pk(manager.filter(job_id=job.pk))
            if locked:
                delete_by_pk(manager, [pk for (pk,) in locked])
                cancelled = _fail(jobs, job.pk, using)
                holds_slot = state == JobState.READY and bool(cancelled.concurrency_key)
                return CancelOutcome.CANCELLED, cancelled, holds_slot
        if _request_stop(job._meta.model, job.pk, using):
            return CancelOutcome.REQUESTED, job, False
        current: JobRow | None = jobs.with_executions().filter(pk=job.pk).first()
    if current is None:
        raise TaskResultDoesNotExist(f"Job {job.result_id} no longer exists.")
    if current.is_finished or hasattr(current, "failed_execution"):
        raise NotCancellableError(
            f"Job {job.result_id} has already "
            f"{'finished' if current.is_finished else 'failed'}; only a waiting "
            "or running job can be cancelled."
        )
    return None


def _fail(jobs: Any, job_pk: int, using: str) -> JobRow:
    job: JobRow = jobs.select_for_update().get(pk=job_pk)
    # Attempt 0: this failure ended no attempt (the job was waiting), which
    # readers must not pair with an earlier, released one.
    error = {**error_record(JobCancelledError(f"Job {job.result_id} was cancelled.")), ATTEMPT: 0}
    job.errors = [*stored_errors(job.errors), error]
    job.save(update_fields=["errors"])
    execution_manager(job._meta.model, JobState.FAILED, using).create(job=job, error=error)
    return job


def _request_stop(job_model: type[models.Model], job_pk: int, using: str) -> bool:
    """Store the request on the job's claim; True if it is running."""
    claims = execution_manager(job_model, JobState.CLAIMED, using).filter(job_id=job_pk)
    if claims.filter(cancel_requested_at__isnull=True).update(cancel_requested_at=timezone.now()):
        return True
    # Asked before: still a request, not an error. Only a claim that
    # carries one counts: under READ COMMITTED a claim committed after the
    # UPDATE's snapshot is visible to this next statement without the
    # request, and calling that "requested" would lose the cancel; the
    # caller reads the job again and tries once more instead.
    return bool(claims.filter(cancel_requested_at__isnull=False).exists())
