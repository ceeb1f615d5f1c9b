"""The reschedule transition: a scheduled or failed job moves to a new due
time (``Job.reschedule``; ``rescheduling.reschedule`` is the public face).

It sits below ``job.py``: the job is a ``JobRow``, its manager and
execution tables are reached through it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from ..exceptions import NotReschedulableError
from .clock import database_now
from .job_row import JobRow, job_manager, state_to_refuse, until_settled
from .job_state import JobState, execution_manager
from .locking import delete_by_pk, lock_by_pk
from .statistics import record_jobs

RESCHEDULABLE = (JobState.SCHEDULED, JobState.FAILED)

When = datetime | timedelta


def checked_time(at: object, what: str = "reschedule()") -> When:
    """``at`` if it can be a due time; ``TypeError`` or ``ValueError``
    naming the problem (and ``what`` was given it) otherwise."""
    if isinstance(at, datetime):
        if timezone.is_naive(at):
            raise ValueError(
                f"{what} needs an aware datetime, not the naive {at!r}: "
                "give it a tzinfo (e.g. django.utils.timezone.make_aware)."
            )
        return at
    if isinstance(at, timedelta):
        if at < timedelta(0):
            raise ValueError(f"{what} takes a timedelta >= 0 from now, not {at!r}.")
        try:
            timezone.now() + at
        except OverflowError as exc:
            raise ValueError(f"{what}: {at!r} from now is past year 9999.") from exc
        return at
    raise TypeError(f"{what} takes an aware datetime or a timedelta, not {at!r}.")


def reschedule_job(job: JobRow, at: When) -> datetime:
    """Move ``job`` to ``at``; returns its new due time (see
    ``rescheduling.reschedule``). ``Job.reschedule()`` calls this."""
    checked_time(at)
    using = job._state.db or "default"
    gave_up = NotReschedulableError(
        f"Job {job.result_id} kept changing state; try rescheduling it again."
    )
    state, run_after = until_settled(
        lambda: _reschedule_once(job, at, using), using, "Reschedule", gave_up
    )
    if state == JobState.FAILED:
        record_jobs([(job.queue_name, job.task_path)], using=using, column="retried")
    return run_after


def _reschedule_once(job: JobRow, at: When, using: str) -> tuple[JobState, datetime] | None:
    """One try in one transaction: the state the job left and its due
    time, or None if it moved meanwhile."""
    jobs = job_manager(job, using)
    with transaction.atomic(using=using):
        for state in RESCHEDULABLE:
            manager = execution_manager(job._meta.model, state, using)
            locked = lock_by_pk(manager.filter(job_id=job.pk))
            if locked:
                delete_by_pk(manager, [pk for (pk,) in locked])
                now = database_now(using)
                moved: JobRow = jobs.select_for_update().get(pk=job.pk)
                run_after = now + at if isinstance(at, timedelta) else at
                moved.run_after = run_after
                moved.save(update_fields=["run_after"])
                jobs.dispatch_all([moved], now=now)
                return state, run_after
        current: JobRow | None = jobs.with_executions().filter(pk=job.pk).first()
    _refuse(job, current)
    return None


def _refuse(job: JobRow, current: JobRow | None) -> None:
    """Raise why ``current`` cannot be rescheduled, unless it is in a
    reschedulable state again (it moved meanwhile: try again)."""
    state = state_to_refuse(job, current, RESCHEDULABLE)
    if state is None:
        return
    why = {
        JobState.CLAIMED: "is running",
        JobState.FINISHED: "has finished",
        JobState.READY: "is ready and runs as soon as a worker is free",
        JobState.BLOCKED: "is blocked by its concurrency limit",
    }[state]
    raise NotReschedulableError(
        f"Job {job.result_id} {why}; only a scheduled or failed job can be rescheduled."
    )
