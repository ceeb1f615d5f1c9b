"""The reschedule transition: a scheduled or failed job moves to a new due
time (``Job.reschedule``; ``rescheduling.reschedule`` is the public face).

It sits below ``job.py``: the job is a ``JobRow``, its manager and
execution tables are reached through it.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from ..compat import TaskResultDoesNotExist
from ..exceptions import NotReschedulableError
from .clock import database_now
from .job_row import JobRow, job_manager
from .job_state import JobState, execution_manager
from .locking import delete_by_pk, lock_by_pk
from .sql.deadlocks import retry_on_lock_conflict
from .statistics import record_jobs

# A job that moves between reading its state and locking it is read again.
MAX_TRIES = 5
RESCHEDULABLE = (JobState.SCHEDULED, JobState.FAILED)

When = datetime | timedelta


def checked_time(at: object) -> When:
    """``at`` if it can be a due time; ``TypeError`` or ``ValueError``
    naming the problem otherwise."""
    if isinstance(at, datetime):
        if timezone.is_naive(at):
            raise ValueError(
                f"reschedule() needs an aware datetime, not the naive {at!r}: "
                "give it a tzinfo (e.g. django.utils.timezone.make_aware)."
            )
        return at
    if isinstance(at, timedelta):
        if at < timedelta(0):
            raise ValueError(f"reschedule() takes a timedelta >= 0 from now, not {at!r}.")
        try:
            timezone.now() + at
        except OverflowError as exc:
            raise ValueError(f"reschedule(): {at!r} from now is past year 9999.") from exc
        return at
    raise TypeError(f"reschedule() takes an aware datetime or a timedelta, not {at!r}.")


def reschedule_job(job: JobRow, at: When) -> datetime:
    """Move ``job`` to ``at``; returns its new due time (see
    ``rescheduling.reschedule``). ``Job.reschedule()`` calls this."""
    checked_time(at)
    using = job._state.db or "default"
    for _ in range(MAX_TRIES):
        moved = retry_on_lock_conflict(
            lambda: _reschedule_once(job, at, using), using=using, what="Reschedule"
        )
        if moved is not None:
            state, run_after = moved
            if state == JobState.FAILED:
                record_jobs([(job.queue_name, job.task_path)], using=using, column="retried")
            return run_after
        time.sleep(0.05)
    raise NotReschedulableError(
        f"Job {job.result_id} kept changing state; try rescheduling it again."
    )


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
    if current is None:
        raise TaskResultDoesNotExist(f"Job {job.result_id} no longer exists.")
    try:
        state = current.state
    except LookupError:
        return  # Between two states: read it again.
    if state in RESCHEDULABLE:
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
