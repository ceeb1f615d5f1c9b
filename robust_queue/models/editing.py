"""The edit transition: a waiting job (ready, scheduled, blocked) gets new
arguments, priority, queue, due time or tags (``operations/editing.py``
checks them and is the public face).

One transaction locks the job's execution row first, by primary key and
skipping a row another transaction holds (``locking.py``), then the job
row: a claim that holds the ready row wins and the edit reads the job
again (and refuses once it is claimed); an edit that holds it makes the
claim skip the job until the edit commits, and the claim then sees the
edited row. Nothing else is left in between.

The execution row is changed in place (its ``queue_name``, ``priority``
and ``scheduled_at`` copy the job's), unless the new due time moves the
job: a scheduled job whose time has come is dispatched as the dispatcher
would; a ready job due later is scheduled, and gives its concurrency slot
back after commit; a blocked one due later is scheduled too, unless it
waits on other jobs (those dispatch it, at its due time, when they end).

Below ``job.py``: the job is a ``JobRow`` (``job_row.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction

from ..exceptions import NotEditableError
from .clock import database_now
from .job_dependency import WAITING_KEY
from .job_row import JobRow, job_manager, state_to_refuse, until_settled
from .job_state import WAITING_STATES, JobState, execution_manager
from .job_tag import JobTag
from .locking import delete_by_pk, lock_by_pk
from .sql import dialect_for

# The job's columns an edit may write.
EDITABLE_FIELDS = ("arguments", "priority", "queue_name", "run_after")


@dataclass(frozen=True, slots=True, kw_only=True)
class Changes:
    """Checked new values: ``values`` by column of the job (a timedelta
    ``run_after`` counts from the database's clock); a column left out is
    not changed."""

    values: dict[str, Any]
    # The new tags, sorted and distinct; None: tags are not changed.
    tags: tuple[str, ...] | None = None

    @property
    def moves(self) -> bool:
        return "run_after" in self.values


def edit_waiting(job: JobRow, changes: Changes) -> JobRow:
    """Apply ``changes`` to waiting ``job``; return the job as it is now.

    Raises ``NotEditableError`` if the job is running or has ended, and
    ``TaskResultDoesNotExist`` if it no longer exists.
    """
    using = job._state.db or "default"
    gave_up = NotEditableError(f"Job {job.result_id} kept changing state; try editing it again.")
    current, holds_slot = until_settled(
        lambda: _edit_once(job, changes, using), using, "Edit", gave_up
    )
    if holds_slot:
        # After commit: the slot it held while ready is free.
        blocked = execution_manager(job._meta.model, JobState.BLOCKED, using)
        blocked.release_slot_of(current)
    return current


def _edit_once(job: JobRow, changes: Changes, using: str) -> tuple[JobRow, bool] | None:
    """One try in one transaction: the edited job and whether it gave up
    a concurrency slot; None if it moved meanwhile."""
    jobs = job_manager(job, using)
    with transaction.atomic(using=using):
        held = _lock_execution(job, using)
        if held is not None:
            state, manager, row_pk = held
            current: JobRow = jobs.select_for_update().get(pk=job.pk)
            return current, _apply(current, state, manager, row_pk, changes, using)
        found: JobRow | None = jobs.with_executions().filter(pk=job.pk).first()
    _refuse(job, found)
    return None


def _lock_execution(job: JobRow, using: str) -> tuple[JobState, Any, int] | None:
    """Lock the waiting execution row of ``job`` unless another
    transaction holds it: its state, table and primary key."""
    for state in WAITING_STATES:
        manager = execution_manager(job._meta.model, state, using)
        locked = lock_by_pk(manager.filter(job_id=job.pk))
        if locked:
            return state, manager, locked[0][0]
    return None


def _apply(
    job: JobRow, state: JobState, manager: Any, row_pk: int, changes: Changes, using: str
) -> bool:
    """Write ``changes`` to ``job`` and its execution row (``row_pk`` of
    ``manager``, locked, of ``state``); True if the job gave up a
    concurrency slot."""
    rows = manager.filter(pk=row_pk)
    now = database_now(using) if changes.moves else None
    for field, value in changes.values.items():
        if isinstance(value, timedelta) and now is not None:
            value = now + value  # run_after from the database's clock
        setattr(job, field, value)
    job.save(update_fields=list(changes.values))
    if changes.tags is not None:
        _replace_tags(job, changes.tags, using)
    due = now is None or job.run_after is None or job.run_after <= now
    if state == JobState.SCHEDULED and changes.moves and due:
        delete_by_pk(manager, [row_pk])
        job_manager(job, using).dispatch_all([job], now=now)
        return False
    if state != JobState.SCHEDULED and not due and not _waits_on_parents(state, rows):
        delete_by_pk(manager, [row_pk])
        execution_manager(job._meta.model, JobState.SCHEDULED, using).create_all([job])
        return state == JobState.READY and bool(job.concurrency_key)
    _copy_columns(job, state, rows, changes, using)
    return False


def _copy_columns(job: JobRow, state: JobState, rows: Any, changes: Changes, using: str) -> None:
    """The execution row's copies of the job's queue, priority and time."""
    columns: dict[str, Any] = {"queue_name": job.queue_name, "priority": job.priority}
    if state == JobState.SCHEDULED and changes.moves and job.run_after is not None:
        columns["scheduled_at"] = job.run_after
    rows.update(**columns)
    if state == JobState.READY and "queue_name" in changes.values:
        # Idle workers of the new queue wake at commit.
        dialect_for(using).notify({job.queue_name})


def _waits_on_parents(state: JobState, rows: Any) -> bool:
    # Its parents dispatch it when they end, at its run_after.
    return state == JobState.BLOCKED and rows.filter(concurrency_key=WAITING_KEY).exists()


def _replace_tags(job: JobRow, tags: tuple[str, ...], using: str) -> None:
    tagged = JobTag.objects.using(using)
    tagged.filter(job_id=job.pk).exclude(tag__in=tags).delete()
    kept = set(tagged.filter(job_id=job.pk).values_list("tag", flat=True))
    tagged.bulk_create([JobTag(job_id=job.pk, tag=tag) for tag in tags if tag not in kept])


def _refuse(job: JobRow, current: JobRow | None) -> None:
    """Raise why ``current`` cannot be edited, unless it is waiting again
    (it moved meanwhile: try again)."""
    state = state_to_refuse(job, current, WAITING_STATES)
    if state is None:
        return
    why = {
        JobState.CLAIMED: "is running (a worker has claimed it)",
        JobState.FINISHED: "has finished",
        JobState.FAILED: "has failed",
    }[state]
    raise NotEditableError(
        f"Job {job.result_id} {why}; only a waiting (ready, scheduled or blocked) "
        "job can be edited."
    )
