"""Recurring schedules edited at runtime: add, change, pause, resume, remove.

A runtime schedule is a ``RecurringTask`` row with ``static=False``; every
scheduler reads the rows each polling interval, so a change takes effect
within one interval, without a restart or a deploy. Schedules declared in
code (``@recurring``, ``ROBUST_QUEUE["recurring_tasks"]``) keep their key:
a runtime schedule cannot take it, and only pausing and resuming apply to
them. Each verb raises ``ScheduleError`` naming every problem, having
written nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from .. import conf
from ..exceptions import ScheduleError
from ..models import RecurringTask
from ..options import recurrence
from .schedule_fields import assign

logger = logging.getLogger(__name__)
DECLARED = (
    "is declared in code (@recurring or ROBUST_QUEUE['recurring_tasks']); "
    "a runtime schedule cannot take its key"
)
EDIT = "change_schedule() or the admin edits it"


def add_schedule(key: str, task: Any, **fields: Any) -> RecurringTask:
    """Add a runtime schedule of ``task`` (a ``@task`` function or its
    path) under ``key``: ``cron="0 9 * * *"`` (with ``timezone=``) or
    ``every=`` (seconds or a ``timedelta``), and optionally ``args``,
    ``kwargs``, ``queue_name``, ``priority``, ``description``.
    """
    row = RecurringTask(key=key, static=False, enabled=True)
    _check(row, assign(row, {"task": task, **fields}))
    using = conf.queue_database()
    if error := declared_key_error(key, using):
        raise ScheduleError(error)
    try:
        with transaction.atomic(using=using):
            row.save(using=using, force_insert=True)
    except IntegrityError:
        error = declared_key_error(key, using)
        raise ScheduleError(error or f"A schedule with the key {key!r} exists; {EDIT}.") from None
    logger.info("Schedule %s added: %s (%s)", key, row.task_path, row.slots)
    return row


def change_schedule(key: str, **fields: Any) -> RecurringTask:
    """Change the given fields of the runtime schedule ``key`` (those of
    ``add_schedule``; ``task=`` too). The next slot is planned anew."""
    using = conf.queue_database()
    with transaction.atomic(using=using):
        row = _runtime_row(key, using, lock=True)
        _check(row, assign(row, fields))
        row.updated_at = timezone.now()
        row.save(using=using)
    logger.info("Schedule %s changed: %s (%s)", key, row.task_path, row.slots)
    return row


def pause_schedule(key: str) -> bool:
    """Stop every scheduler enqueueing ``key`` (declared or runtime);
    False if it was paused already."""
    changed = _row(key, conf.queue_database()).disable()
    logger.info("Schedule %s paused%s", key, "" if changed else " (it was)")
    return changed


def resume_schedule(key: str) -> bool:
    """Let schedulers enqueue ``key`` again from its next slot (missed
    slots are not back-filled); False if it was not paused."""
    changed = _row(key, conf.queue_database()).enable()
    logger.info("Schedule %s resumed%s", key, "" if changed else " (it was running)")
    return changed


def remove_schedule(key: str) -> None:
    """Delete the runtime schedule ``key``; no scheduler enqueues it from
    then on (a slot being enqueued meanwhile is the last)."""
    using = conf.queue_database()
    with transaction.atomic(using=using):
        _runtime_row(key, using, lock=True).delete()
    logger.info("Schedule %s removed", key)


def declared_key_error(key: str, using: str | None = None) -> str | None:
    """Why a runtime schedule cannot take ``key``: code declares it (a
    deploy not yet synced by a scheduler, or a declared row)."""
    rows = RecurringTask.objects.using(using or conf.queue_database())
    if key in recurrence.declared_keys() or rows.filter(key=key, static=True).exists():
        return f"Recurring task {key!r} {DECLARED}."
    return None


def _check(row: RecurringTask, errors: list[str]) -> None:
    if errors:
        raise ScheduleError(f"Schedule {row.key!r}: " + " ".join(errors))


def _row(key: str, using: str, *, lock: bool = False) -> RecurringTask:
    rows = RecurringTask.objects.using(using)
    try:
        return (rows.select_for_update() if lock else rows).get(key=key)
    except RecurringTask.DoesNotExist:
        raise ScheduleError(f"No recurring task has the key {key!r}.") from None


def _runtime_row(key: str, using: str, *, lock: bool) -> RecurringTask:
    row = _row(key, using, lock=lock)
    if row.static:
        raise ScheduleError(
            f"Recurring task {key!r} is declared in code: change or remove it "
            "there; at runtime it can only be paused and resumed."
        )
    return row
