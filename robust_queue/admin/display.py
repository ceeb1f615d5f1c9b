"""Showing whatever is in the tables: no stored value can break a page.

Rows may be written by hand, by an older version, or be damaged: a job
without an execution row, arguments of the wrong shape, a tagged value
that does not parse, a lone surrogate in JSON text. Every helper here
returns something printable instead of raising.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from ..arguments import decode_arguments
from ..exceptions import DeserializationError
from ..models import Job, JobState, attempt_history

# Re-exported: the admin formats through this module.
from ..operations.formatting import duration as duration
from ..operations.formatting import number as number
from ..operations.formatting import text as text
from ..options.sealing import is_sealed

NO_STATE = "No state"
# The largest primary key any of the databases stores (a signed bigint).
MAX_ID = 2**63 - 1
CANNOT_DECODE = "cannot decode"
# Shown instead of an @encrypted task's arguments or return value: the
# admin never holds the keys' plaintext, so neither masking nor search can.
ENCRYPTED = "encrypted"
# Python's exceptions for data of the wrong type or shape, and deep nesting.
_MALFORMED = (
    TypeError,
    ValueError,
    ArithmeticError,
    AttributeError,
    LookupError,
    RecursionError,
    DeserializationError,
)


def clean(value: Any) -> Any:
    """``value`` with every string in it (keys too) made encodable."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, list):
        return [clean(item) for item in value]
    if isinstance(value, dict):
        return {text(key): clean(item) for key, item in value.items()}
    return value


def is_id(value: Any) -> bool:
    """Whether ``value`` (a URL part) can be a primary key: 1..MAX_ID."""
    string = str(value)
    return string.isascii() and string.isdigit() and 0 < int(string) <= MAX_ID


def state_of(job: Job) -> JobState | None:
    """The job's state; None for a job with no execution row."""
    try:
        return job.state
    except LookupError:
        return None


def decoded_arguments(job_arguments: Any) -> tuple[list[Any], dict[str, Any]]:
    """``(args, kwargs)`` for display (no model is fetched).

    Raises ``DeserializationError`` for anything but a well-formed
    ``{"args": [...], "kwargs": {...}}``, and for encrypted ones (which
    the admin never decrypts).
    """
    if is_sealed(job_arguments):
        raise DeserializationError(ENCRYPTED)
    if not isinstance(job_arguments, Mapping):
        raise DeserializationError(f"arguments are a {type(job_arguments).__name__}")
    if not isinstance(job_arguments.get("args", []), list):
        raise DeserializationError("'args' is not a list")
    if not isinstance(job_arguments.get("kwargs", {}), Mapping):
        raise DeserializationError("'kwargs' is not an object")
    try:
        return decode_arguments(job_arguments, fetch_models=False)
    except _MALFORMED as exc:
        raise DeserializationError(str(exc) or type(exc).__name__) from exc


def cannot_decode(reason: Any) -> str:
    return f"({CANNOT_DECODE}: {text(reason)})"


def pretty(value: Any) -> str:
    """Indented JSON (ASCII-escaped), or a "cannot decode" note."""
    try:
        return json.dumps(value, indent=2, sort_keys=True, default=str)
    except _MALFORMED as exc:
        return cannot_decode(exc)


def worker_ids(job: Job) -> list[str]:
    value = job.worker_ids
    return [text(item) for item in value] if isinstance(value, list) else []


def error_records(job: Job) -> list[dict[str, Any]]:
    """One record per stored error: ``exception_class``, ``traceback``, and
    the attempt it ended (``attempt``, ``worker_id``, ``started_at``,
    ``ended_at``; None or "" when the record does not say)."""
    records = job.errors if isinstance(job.errors, list) else [job.errors]
    return [_error_record(record) for record in records]


def _error_record(record: Any) -> dict[str, Any]:
    if not isinstance(record, Mapping):
        return {
            "exception_class": cannot_decode("not an object"),
            "traceback": text(record),
            "attempt": None,
            "names_attempt": False,
            "worker_id": "",
            "started_at": None,
            "ended_at": None,
        }
    return {
        "exception_class": text(record.get("exception_class_path", "")),
        "traceback": text(record.get("traceback", "")),
        "attempt": attempt_history.attempt_of(record),
        "names_attempt": attempt_history.names_attempt(record),
        "worker_id": text(record.get(attempt_history.WORKER_ID) or ""),
        "started_at": attempt_history.moment(record, attempt_history.STARTED_AT),
        "ended_at": attempt_history.moment(record, attempt_history.ENDED_AT),
    }


def ago(moment: datetime | None, now: datetime | None = None) -> str:
    """ "12 s ago", "4 min ago", "in 3 min"; "—" for none."""
    if moment is None:
        return "—"
    # Whole seconds: "350 ms ago" is more precision than a moment needs.
    # A future moment under a second away is "in 1 s", never "0 s ago".
    seconds = ((now or timezone.now()) - moment).total_seconds()
    if seconds < 0:
        return f"in {duration(timedelta(seconds=max(int(-seconds), 1)))}"
    return f"{duration(timedelta(seconds=int(seconds)))} ago"


def span(start: datetime | None, end: datetime | None) -> str:
    """``end - start`` in human units; "—" unless both are known.

    A job due later than it was enqueued waits from its due time."""
    if start is None or end is None:
        return "—"
    return duration(max(end - start, timedelta()))


def last_line(traceback_text: Any) -> str:
    """The last non-empty line of a traceback: the exception and message."""
    lines = [line for line in text(traceback_text or "").splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""
