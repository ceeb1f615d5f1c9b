"""A running job's progress, reported by its task.

``progress(context, done, total, note)`` stores ``{"done", "total",
"note", "at"}`` in the job row (``Job.progress``), at most once every
``progress_interval`` seconds per job: a call inside the window only keeps
its value, which the next call past the window writes, or the end of the
body (``reporting``), so the last value reported is never lost. Each write
is fenced by the job's claim: once the claim is gone (the job was pruned,
cancelled and failed, or runs again elsewhere) nothing is written and
nothing is raised. A database error is logged, never raised into the
task: progress is not worth failing a job for.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.db import DatabaseError, connections, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from .. import conf
from ..compat import TaskContext, TaskResult
from ..models import Job

if TYPE_CHECKING:
    from ..models import ClaimedExecution

logger = logging.getLogger(__name__)

# A note is a line for a person, not a log.
NOTE_MAX_CHARS = 200

# Result id -> the claim of each job running in this process, and the
# reporter of those whose task reported progress.
_CLAIMS: dict[str, ClaimedExecution] = {}
_REPORTERS: dict[str, _Reporter] = {}


@dataclass(frozen=True, slots=True)
class Progress:
    """A job's progress as last written: ``done`` of ``total`` (None:
    unknown), a note, and when it was written."""

    done: float
    total: float | None
    note: str
    at: datetime | None

    @property
    def fraction(self) -> float | None:
        """``done / total`` within 0..1; None without a total."""
        if not self.total:
            return None
        return min(max(self.done / self.total, 0.0), 1.0)

    @classmethod
    def from_stored(cls, value: Any) -> Progress | None:
        """The progress a ``Job.progress`` value holds; None for none or a
        value that is not one (a hand-edited column)."""
        if not isinstance(value, dict):
            return None
        done, total = value.get("done"), value.get("total")
        if not (_is_number(done) and (total is None or _is_number(total))):
            return None
        assert isinstance(done, int | float)
        at = value.get("at")
        return cls(
            done=done,
            total=total,
            note=str(value.get("note") or ""),
            at=parse_datetime(at) if isinstance(at, str) else None,
        )


def progress(context: TaskContext, done: float, total: float | None = None, note: str = "") -> bool:
    """Report that the running job has done ``done`` of ``total`` units
    (``total`` None: unknown), with an optional short ``note``.

    Returns True if this call wrote the row, False if the value waits for
    the end of the throttle window (``progress_interval``) or the body, or
    was not written (the claim is gone, or this is not a Robust Queue
    worker: a direct call, another backend). Bad values raise
    ``TypeError`` / ``ValueError`` naming the problem.
    """
    result = _result_of(context)
    value = _value(done, total, note)
    claimed = _CLAIMS.get(result.id)
    if claimed is None:
        return False
    reporter = _REPORTERS.get(result.id)
    if reporter is None:
        reporter = _REPORTERS.setdefault(result.id, _Reporter(claimed))
    return reporter.report(value, conf.get(conf.PROGRESS_INTERVAL))


async def aprogress(
    context: TaskContext, done: float, total: float | None = None, note: str = ""
) -> bool:
    """``progress`` for an ``async def`` task: the write runs in the
    worker's thread, on its connection."""
    return await sync_to_async(progress)(context, done, total, note)


def progress_of(result: TaskResult[Any] | TaskContext) -> Progress | None:
    """The progress last written for a job (a ``TaskResult``, as
    ``get_result`` returns, or a ``TaskContext``); None if its task never
    reported any or the job is not stored."""
    result = _result_of(result)
    jobs = Job.objects.using(conf.database_for(result.backend))
    stored = jobs.filter(result_id=result.id).values_list("progress", flat=True).first()
    return Progress.from_stored(stored)


def running_claim(result_id: str) -> ClaimedExecution | None:
    """The claim of job ``result_id`` while its body runs in this process
    (``reporting``); None otherwise. Steps (``steps.py``) write through it."""
    return _CLAIMS.get(result_id)


@contextmanager
def reporting(claimed: ClaimedExecution, result_id: str) -> Iterator[None]:
    """Let the body of ``claimed`` report progress; at its end, write the
    value that was still waiting for its window."""
    _CLAIMS[result_id] = claimed
    try:
        yield
    finally:
        _CLAIMS.pop(result_id, None)
        reporter = _REPORTERS.pop(result_id, None)
        if reporter is not None:
            reporter.flush()


class _Reporter:
    """One running job's throttle: the time of its last write and the
    value that waits for the next one."""

    def __init__(self, claimed: ClaimedExecution) -> None:
        self._claimed = claimed
        self._lock = threading.Lock()
        self._written_at: float | None = None
        self._pending: dict[str, Any] | None = None
        self._gone = False

    def report(self, value: dict[str, Any], interval: float) -> bool:
        with self._lock:
            if self._gone:
                return False
            now = time.monotonic()
            if self._written_at is not None and now - self._written_at < interval:
                self._pending = value
                return False
            self._written_at, self._pending = now, None
        return self._write(value)

    def flush(self) -> None:
        with self._lock:
            value, self._pending = self._pending, None
        if value is not None and not self._gone:
            self._write(value)

    def _write(self, value: dict[str, Any]) -> bool:
        claimed = self._claimed
        using = claimed._state.db or "default"
        value = {**value, "at": timezone.now().isoformat()}
        try:
            # Inside the task's own transaction, a savepoint: a failed
            # write must not break the task's transaction.
            with savepoint_if_atomic(using):
                written = Job.objects.using(using).record_progress(
                    claimed.job_id, claimed.pk, value
                )
        except DatabaseError as exc:
            logger.warning("Job %s: its progress could not be written: %s", claimed.job_id, exc)
            return False
        if not written:
            self._gone = True
        return written


@contextmanager
def savepoint_if_atomic(using: str) -> Iterator[None]:
    """A savepoint inside a transaction the task opened (a failed write
    must not break it), nothing otherwise; steps (``steps.py``) too."""
    if connections[using].in_atomic_block:
        with transaction.atomic(using=using):
            yield
    else:
        yield


def _result_of(context: Any) -> TaskResult[Any]:
    result = getattr(context, "task_result", context)
    if not isinstance(result, TaskResult):
        raise TypeError(
            f"Progress needs the task's TaskContext (a task declared with "
            f"takes_context=True) or a TaskResult, not {type(context).__name__}."
        )
    return result


def _value(done: Any, total: Any, note: Any) -> dict[str, Any]:
    if not _is_number(done) or done < 0:
        raise ValueError(f"progress(): done must be a number of at least 0, not {done!r}.")
    if total is not None and (not _is_number(total) or total <= 0):
        raise ValueError(f"progress(): total must be None or a number above 0, not {total!r}.")
    if not isinstance(note, str):
        raise TypeError(f"progress(): note must be a string, not {type(note).__name__}.")
    return {"done": done, "total": total, "note": note[:NOTE_MAX_CHARS]}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
