"""Which columns of each job list sort, and by what: only those an index
serves, so that a sorted page of a ten-million-job table reads a page of an
index, never sorts the table.

Each sortable column names the fields it orders by, ascending; a
descending sort reverses each (an index is read backwards as well as
forwards). A state's list sorts on its own execution table (its job id,
its time), which holds that state's jobs only. Any other column, and a
hand-typed ``o=`` naming one, keeps the list's own order
(``columns.ORDERING``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.admin.views.main import ORDER_VAR
from django.http import HttpRequest

from ...models import JobState
from .filters import state_of

# column -> its ordering fields, ascending; per state ("" is "All").
SORTABLE: dict[str, dict[str, tuple[str, ...]]] = {
    # The job table: its primary key and rq_job_enqueued.
    "": {"job": ("pk",), "enqueued": ("enqueued_at", "pk")},
    # rq_ready_poll_all (priority DESC, fair round, job): the order workers
    # take them, descending.
    JobState.READY: {
        "job": ("ready_execution__job_id",),
        "priority": (
            "ready_execution__priority",
            "-ready_execution__fair_round",
            "-ready_execution__job_id",
        ),
    },
    # rq_scheduled_due (scheduled_at, priority DESC, job).
    JobState.SCHEDULED: {
        "job": ("scheduled_execution__job_id",),
        "run_at": (
            "scheduled_execution__scheduled_at",
            "-scheduled_execution__priority",
            "scheduled_execution__job_id",
        ),
    },
    JobState.CLAIMED: {"job": ("claimed_execution__job_id",)},
    # The blocked table's primary key is the order jobs were blocked in.
    JobState.BLOCKED: {
        "job": ("blocked_execution__job_id",),
        "blocked_since": ("blocked_execution__id",),
    },
    # rq_failed_created (created_at), ties by the failure's id.
    JobState.FAILED: {
        "job": ("failed_execution__job_id",),
        "failed_at": ("failed_execution__created_at", "failed_execution__id"),
    },
    # rq_job_finished (finished_at); the job id is the primary key.
    JobState.FINISHED: {"job": ("pk",), "finished": ("finished_at", "pk")},
}


def sortable_columns(request: HttpRequest) -> tuple[str, ...]:
    """The columns of this list whose headers sort it."""
    return tuple(SORTABLE.get(state_of(request), {}))


def chosen_ordering(
    request: HttpRequest, params: dict[str, Any], list_display: Sequence[Any]
) -> list[str] | None:
    """The ordering the first sorted header asks for, if it may sort this
    list (``o=`` names columns by their place in ``list_display``); None
    keeps the list's own order."""
    sortable = SORTABLE.get(state_of(request), {})
    first = str(params.get(ORDER_VAR, "")).split(".")[0]
    descending = first.startswith("-")
    try:
        column = list_display[int(first.lstrip("-"))]
    except (ValueError, IndexError):
        return None
    fields = sortable.get(column) if isinstance(column, str) else None
    if not fields:
        return None
    return [_reversed(field) for field in fields] if descending else list(fields)


def _reversed(field: str) -> str:
    return field[1:] if field.startswith("-") else f"-{field}"


def note(request: HttpRequest, labels: dict[str, str]) -> str:
    """What the page says about sorting: which headers sort (``labels``:
    column -> its header)."""
    names = [labels.get(column, column) for column in sortable_columns(request)]
    if not names:
        return ""
    return (
        f"Sort by {', '.join(names)}: the columns an index serves. "
        "Other columns keep the list's order."
    )
