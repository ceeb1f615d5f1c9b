"""Which attempt an error record belongs to, and when that attempt ran.

The job row keeps only the first start, the last start and the last end;
each failed attempt's own start and end are written into its error record
when the failure is recorded (``ClaimedExecution.fail``), with its number
and worker id. Records written before these fields existed have none of
them: readers fall back to counting (``attempt_of``).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.utils import dateparse, timezone

if TYPE_CHECKING:
    from .job_row import JobRow

ATTEMPT = "attempt"
WORKER_ID = "worker_id"
STARTED_AT = "started_at"
ENDED_AT = "ended_at"


def stamped(error: dict[str, str], job: JobRow, ended_at: datetime | None = None) -> dict[str, Any]:
    """``error`` with the attempt of ``job`` that it ended: its number, its
    worker, its start (the claim's) and its end (``ended_at``, now)."""
    workers = stored_worker_ids(job.worker_ids)
    started = job.last_attempted_at
    return {
        **error,
        ATTEMPT: len(workers),
        WORKER_ID: str(workers[-1]) if workers else "",
        STARTED_AT: started.isoformat() if started is not None else None,
        ENDED_AT: (ended_at or timezone.now()).isoformat(),
    }


def stored_worker_ids(value: Any) -> list[Any]:
    """A job's stored ``worker_ids`` column as a list, one entry a run.

    The column may have been edited by hand: a value that is not a list
    counts as one run (it is kept as the only entry), and None as none.
    """
    if value is None:
        return []
    if isinstance(value, list):
        return list(value)
    return [value]


def attempt_of(record: Any) -> int | None:
    """The attempt number a record names; None for an older record (or a
    failure that ended no attempt, such as cancelling a waiting job)."""
    if not isinstance(record, dict):
        return None
    number = record.get(ATTEMPT)
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        return None
    return number


def names_attempt(record: Any) -> bool:
    """Whether a record says which attempt it ended, 0 (none: a waiting
    job was cancelled) included; older records do not."""
    number = record.get(ATTEMPT) if isinstance(record, dict) else None
    return isinstance(number, int) and not isinstance(number, bool)


def moment(record: Any, field: str) -> datetime | None:
    """A stored start or end time; None if missing or unreadable."""
    value = record.get(field) if isinstance(record, dict) else None
    if not isinstance(value, str):
        return None
    try:
        parsed = dateparse.parse_datetime(value)
    except ValueError:
        return None
    if parsed is not None and timezone.is_naive(parsed):
        return None
    return parsed
