"""The fields of a runtime schedule, checked as declared schedules are.

``assign()`` sets a ``RecurringTask`` row's fields from what the schedules
API or the admin's form was given and returns every problem, each as a
sentence: the task must be one the registry knows (a ``Task`` or its
path, never any importable name), the cron string must parse (or the
interval be at least a second), the time zone must exist, the arguments
must encode and the queue and priority be ones the task accepts. Nothing
is written here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from ..arguments import encode_arguments
from ..compat import Task
from ..exceptions import UnknownTaskError
from ..models import RecurringTask
from ..options import recurrence
from ..options.registry import resolve_task

FIELDS = frozenset(
    {"task", "cron", "every", "args", "kwargs", "queue_name", "priority", "timezone", "description"}
)


def assign(row: RecurringTask, fields: Mapping[str, Any]) -> list[str]:
    """Set ``fields`` on ``row``; what is wrong with the result."""
    unknown = sorted(set(fields) - FIELDS)
    if unknown:
        return [f"unknown fields {', '.join(unknown)} (known: {', '.join(sorted(FIELDS))})."]
    errors = _assign_task(row, fields["task"]) if "task" in fields else []
    _assign_slots(row, fields)
    errors += _assign_arguments(row, fields)
    if "queue_name" in fields:
        row.queue_name = "" if fields["queue_name"] is None else fields["queue_name"]
    if "priority" in fields:
        row.priority = fields["priority"]
    if "description" in fields:
        row.description = str(fields["description"] or "")
    if error := recurrence.key_error(row.key):
        errors.append(error)
    errors += [*row.slots.problems(), *recurrence.option_errors(row.queue_name, row.priority)]
    return errors or _task_errors(row)


def _assign_task(row: RecurringTask, task: object) -> list[str]:
    try:
        if isinstance(task, Task):
            # The registry's own task, whatever object was passed.
            found = resolve_task(task.module_path, task.backend)
        else:
            found = recurrence.task_for_path(task if isinstance(task, str) else repr(task))
    except UnknownTaskError as exc:
        return [str(exc)]
    row.task_path, row.backend_alias = found.module_path, found.backend
    return []


def _assign_slots(row: RecurringTask, fields: Mapping[str, Any]) -> None:
    if "cron" in fields:
        row.schedule = fields["cron"] or ""
        if fields["cron"] and "every" not in fields:
            row.interval = None
    if "every" in fields:
        row.interval = _interval(fields["every"])
        if fields["every"] is not None and "cron" not in fields:
            # An interval replaces the cron string and its time zone.
            row.schedule, row.time_zone = "", ""
    if "timezone" in fields:
        row.time_zone = fields["timezone"] or ""


def _interval(every: object) -> Any:
    # Seconds as a number, or a timedelta; anything else is left for
    # Slots.problems() to name.
    if isinstance(every, int | float) and not isinstance(every, bool):
        try:
            return timedelta(seconds=every)
        except (ValueError, OverflowError):  # NaN, or past timedelta's range
            return every
    return every


def _assign_arguments(row: RecurringTask, fields: Mapping[str, Any]) -> list[str]:
    if "args" not in fields and "kwargs" not in fields:
        return []
    args, kwargs = fields.get("args", ()), fields.get("kwargs") or {}
    if isinstance(args, str | bytes) or not isinstance(args, Sequence):
        return [f"args must be a list or tuple, not {type(args).__name__}."]
    if not isinstance(kwargs, Mapping):
        return [f"kwargs must be a dict, not {type(kwargs).__name__}."]
    try:
        encoded = encode_arguments(list(args), dict(kwargs))
    except (TypeError, ValueError) as exc:
        return [f"its arguments cannot be stored: {exc}"]
    current = row.arguments if isinstance(row.arguments, dict) else {}
    row.arguments = {
        "args": encoded["args"] if "args" in fields else current.get("args", []),
        "kwargs": encoded["kwargs"] if "kwargs" in fields else current.get("kwargs", {}),
    }
    return []


def _task_errors(row: RecurringTask) -> list[str]:
    if not row.task_path:
        return ["give the task to enqueue (a @task function or its path)."]
    try:
        row.get_task()
    except UnknownTaskError as exc:
        return [str(exc)]
    return []
