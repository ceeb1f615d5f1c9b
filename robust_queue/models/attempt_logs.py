"""What a task logged during each attempt: ``Job.attempt_logs``.

A list of entries, oldest first, one per attempt that kept a log
(``running/job_logs.py``): ``{"attempt": n, "worker_id": ..., "text":
...}``. Only the last ``KEPT_ATTEMPTS`` attempts are kept, so a job that
is retried many times keeps a bounded row. Readers take whatever the
column holds (it may be edited by hand): an entry that is not one is
skipped, never an error.
"""

from __future__ import annotations

from typing import Any

from django.db import models

from .job import Job
from .job_state import JobState, execution_manager

ATTEMPT = "attempt"
WORKER_ID = "worker_id"
TEXT = "text"
# Attempts whose log a job keeps (each at most running/job_logs.py's cap).
KEPT_ATTEMPTS = 10


def stored_logs(value: Any) -> list[dict[str, Any]]:
    """The entries a stored ``attempt_logs`` value holds; [] for none."""
    if not isinstance(value, list):
        return []
    return [entry for entry in value if isinstance(entry, dict)]


def with_entry(value: Any, entry: dict[str, Any]) -> list[dict[str, Any]]:
    """``value``'s entries with ``entry`` last, the oldest dropped past
    ``KEPT_ATTEMPTS``; an earlier entry of the same attempt is replaced."""
    kept = [e for e in stored_logs(value) if e.get(ATTEMPT) != entry.get(ATTEMPT)]
    return [*kept, entry][-KEPT_ATTEMPTS:]


def record(using: str, job_id: int, claim_id: int, logs: list[dict[str, Any]]) -> bool:
    """Store a running job's ``attempt_logs``; False (nothing written) once
    its claim ``claim_id`` is gone: the job ended under someone else, or
    runs again under another claim.

    One UPDATE of the job row, fenced by a subquery on the claim table.
    """
    claims = execution_manager(Job, JobState.CLAIMED, using)
    fence = models.Exists(claims.filter(pk=claim_id, job_id=job_id))
    return bool(Job.objects.using(using).filter(fence, pk=job_id).update(attempt_logs=logs))


def entry_of(value: Any, number: int) -> dict[str, Any] | None:
    """The stored entry of attempt ``number``; None if it kept no log."""
    for entry in reversed(stored_logs(value)):
        if entry.get(ATTEMPT) == number:
            return entry
    return None
