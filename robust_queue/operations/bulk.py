"""Admin actions over many jobs, a batch of job ids per transaction.

"Everything matching this filter" may be a million jobs: ids are read by
keyset (``pk > last``) so no batch rescans what earlier ones handled, and
each batch is one model verb in its own transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import QuerySet

from ..compat import TaskResultDoesNotExist
from ..exceptions import NotCancellableError
from ..models import BlockedExecution, FailedExecution, Job, ScheduledExecution
from ..models.batching import id_batches
from ..models.sql.deadlocks import retry_on_lock_conflict

DEFAULT_BATCH_SIZE = 500
# Called after each batch with (changed, total) so far.
Progress = Callable[[int, int], None] | None

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How many jobs an operation changed out of how many it looked at."""

    changed: int
    total: int

    @property
    def skipped(self) -> int:
        return self.total - self.changed


def retry(
    jobs: QuerySet[Job], size: int = DEFAULT_BATCH_SIZE, progress: Progress = None
) -> Outcome:
    """Make the failed jobs among ``jobs`` ready again."""
    return _in_batches(jobs, size, _retry_batch, progress)


def run_now(
    jobs: QuerySet[Job], size: int = DEFAULT_BATCH_SIZE, progress: Progress = None
) -> Outcome:
    """Make the scheduled and blocked jobs among ``jobs`` ready now."""
    return _in_batches(jobs, size, _run_now_batch, progress)


def discard(
    jobs: QuerySet[Job], size: int = DEFAULT_BATCH_SIZE, progress: Progress = None
) -> Outcome:
    """Delete the jobs among ``jobs`` that are not running."""
    return _in_batches(jobs, size, _discard_batch, progress)


def cancel(
    jobs: QuerySet[Job], size: int = DEFAULT_BATCH_SIZE, progress: Progress = None
) -> Outcome:
    """Cancel the waiting jobs among ``jobs``; ask the running ones to stop."""
    return _in_batches(jobs, size, _cancel_batch, progress)


def _cancel_batch(db: str, ids: list[int]) -> int:
    # One job at a time: each is its own transition (cancellation.py).
    changed = 0
    for job in Job.objects.using(db).filter(pk__in=ids).order_by("pk"):
        try:
            job.cancel()
        except (NotCancellableError, TaskResultDoesNotExist):
            continue  # It finished or went away meanwhile.
        changed += 1
    return changed


def _retry_batch(db: str, ids: list[int]) -> int:
    failed = FailedExecution.objects.using(db).filter(job_id__in=ids)
    return retry_on_lock_conflict(failed.retry_all, using=db, what="Admin retry")


def _run_now_batch(db: str, ids: list[int]) -> int:
    scheduled = ScheduledExecution.objects.using(db).filter(job_id__in=ids)
    blocked = BlockedExecution.objects.using(db).filter(job_id__in=ids)
    return retry_on_lock_conflict(
        scheduled.dispatch_now, using=db, what="Admin run now"
    ) + retry_on_lock_conflict(blocked.dispatch_now, using=db, what="Admin run now")


def _discard_batch(db: str, ids: list[int]) -> int:
    # Each batch of the discard is retried after a deadlock on its own.
    return Job.objects.using(db).filter(pk__in=ids).discard_all_in_batches(len(ids))


def _in_batches(
    jobs: QuerySet[Job],
    size: int,
    operation: Callable[[str, list[int]], int],
    progress: Progress = None,
) -> Outcome:
    changed = total = 0
    for ids in id_batches(jobs, size):
        changed += operation(jobs.db, ids)
        total += len(ids)
        if progress is not None:
            progress(changed, total)
    logger.info("Admin %s: %d of %d job(s) changed", operation.__name__, changed, total)
    return Outcome(changed, total)
