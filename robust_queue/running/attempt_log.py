"""One log line when a job attempt starts and one when it ends.

Logger ``robust_queue.jobs`` at INFO. The fields travel as ``extra`` on the
record (``result_id``, ``task``, ``queue``, ``attempt``, ``worker``,
``wait_ms``; at the end also ``run_ms`` and ``outcome``, and for a
failure ``error``: its exception and message, masked like every value
shown), so a JSON formatter gets them as fields. Set the logger to WARNING
to drop the lines; nothing is built for a level that is off.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from .. import masking
from ..models.attempt_history import stored_worker_ids

if TYPE_CHECKING:
    from ..models import Job

logger = logging.getLogger("robust_queue.jobs")

# Outcomes of one attempt.
SUCCESSFUL = "successful"
FAILED = "failed"
RETRIED = "retried"
# The task raised robust_queue.Snooze: it runs again later.
SNOOZED = "snoozed"
# The claim was gone when the outcome was written (its process was
# pruned meanwhile): somebody else ended the job.
SKIPPED = "skipped"


class Attempt:
    """The log lines of one attempt of ``job``."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self._started = time.monotonic()
        self._fields: dict[str, Any] | None = None

    def started(self) -> None:
        if not logger.isEnabledFor(logging.INFO):
            return
        fields = self._base_fields()
        logger.info(
            "Job %s started: %s on queue %s, attempt %d, by %s after %d ms",
            fields["result_id"],
            fields["task"],
            fields["queue"],
            fields["attempt"],
            fields["worker"],
            fields["wait_ms"],
            extra=fields,
        )

    def finished(self, outcome: str, error: Mapping[str, str] | None = None) -> None:
        """The end's line; ``error`` (a failure's record) adds its exception
        and message, so that a failure is read in the log whatever the
        Tasks framework logs of it."""
        if not logger.isEnabledFor(logging.INFO):
            return
        fields = {
            **self._base_fields(),
            "run_ms": round((time.monotonic() - self._started) * 1000),
            "outcome": outcome,
        }
        message = "Job %s %s: %s on queue %s, attempt %d, in %d ms"
        if error is not None:
            fields["error"] = _error_line(error)
            message += ": %s"
        logger.info(
            message,
            fields["result_id"],
            outcome,
            fields["task"],
            fields["queue"],
            fields["attempt"],
            fields["run_ms"],
            *([fields["error"]] if error is not None else []),
            extra=fields,
        )

    def _base_fields(self) -> dict[str, Any]:
        if self._fields is None:
            job = self.job
            workers = stored_worker_ids(job.worker_ids)
            self._fields = {
                "result_id": job.result_id,
                "task": job.task_path,
                "queue": job.queue_name,
                "attempt": len(workers),
                "worker": str(workers[-1]) if workers else "",
                "wait_ms": _wait_ms(job),
            }
        return self._fields


def _wait_ms(job: Job) -> int:
    """From when the job was due (enqueued, or its retry time) to now."""
    due = job.enqueued_at
    if job.run_after is not None and (due is None or job.run_after > due):
        due = job.run_after
    started = job.last_attempted_at or timezone.now()
    return max(round((started - due).total_seconds() * 1000), 0) if due else 0


# How much of a failure's exception and message the log line quotes, and
# how much of it is read (masked) to quote that much.
ERROR_LINE_CHARS = 500
_ERROR_READ_CHARS = 10 * ERROR_LINE_CHARS


def _error_line(error: Mapping[str, str]) -> str:
    """A failure's exception and message on one line (``ValueError: ...``,
    a message of several lines joined), masked, then cut to
    ``ERROR_LINE_CHARS``: masked first, so a cut never leaves part of a
    secret that masking would have hidden whole."""
    lines = str(error.get("traceback") or "").strip().splitlines()
    name = str(error.get("exception_class_path") or "").rpartition(".")[2]
    start = len(lines) - 1
    if name:
        for index in range(len(lines) - 1, -1, -1):
            line = lines[index]
            if line == name or line.startswith((f"{name}:", f"{name} ")) or f".{name}:" in line:
                start = index
                break
    text = "\n".join(lines[max(start, 0) :]) or name
    shown = " ".join(masking.mask(text[:_ERROR_READ_CHARS]).split())
    return shown if len(shown) <= ERROR_LINE_CHARS else shown[:ERROR_LINE_CHARS] + "…"
