"""One log line when a job attempt starts and one when it ends.

Logger ``robust_queue.jobs`` at INFO. The fields travel as ``extra`` on the
record (``result_id``, ``task``, ``queue``, ``attempt``, ``worker``,
``wait_ms``; at the end also ``run_ms`` and ``outcome``), so a JSON
formatter gets them as fields. Set the logger to WARNING to drop the
lines; nothing is built for a level that is off.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from django.utils import timezone

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

    def finished(self, outcome: str) -> None:
        if not logger.isEnabledFor(logging.INFO):
            return
        fields = {
            **self._base_fields(),
            "run_ms": round((time.monotonic() - self._started) * 1000),
            "outcome": outcome,
        }
        logger.info(
            "Job %s %s: %s on queue %s, attempt %d, in %d ms",
            fields["result_id"],
            outcome,
            fields["task"],
            fields["queue"],
            fields["attempt"],
            fields["run_ms"],
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
