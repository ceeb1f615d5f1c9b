"""Admin actions over many jobs, a batch of job ids per transaction.

"Everything matching this filter" may be a million jobs: ids are read by
keyset (``pk > last``) so no batch rescans what earlier ones handled, and
each batch is one model verb in its own transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from django.db.models import QuerySet

from ..models import BlockedExecution, FailedExecution, Job, ScheduledExecution

DEFAULT_BATCH_SIZE = 500

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How many jobs an operation changed out of how many it looked at."""

    changed: int
    total: int

    @property
    def skipped(self) -> int:
        return self.total - self.changed


def id_batches(jobs: QuerySet[Job], size: int = DEFAULT_BATCH_SIZE) -> Iterator[list[int]]:
    """The ids of ``jobs`` in ascending batches of ``size``, by keyset."""
    ids = jobs.order_by("pk").values_list("pk", flat=True)
    last = None
    while True:
        page = ids if last is None else ids.filter(pk__gt=last)
        batch = list(page[:size])
        if not batch:
            return
        yield batch
        last = batch[-1]


def retry(jobs: QuerySet[Job], size: int = DEFAULT_BATCH_SIZE) -> Outcome:
    """Make the failed jobs among ``jobs`` ready again."""
    return _in_batches(jobs, size, _retry_batch)


def run_now(jobs: QuerySet[Job], size: int = DEFAULT_BATCH_SIZE) -> Outcome:
    """Make the scheduled and blocked jobs among ``jobs`` ready now."""
    return _in_batches(jobs, size, _run_now_batch)


def discard(jobs: QuerySet[Job], size: int = DEFAULT_BATCH_SIZE) -> Outcome:
    """Delete the jobs among ``jobs`` that are not running."""
    return _in_batches(jobs, size, _discard_batch)


def _retry_batch(db: str, ids: list[int]) -> int:
    return FailedExecution.objects.using(db).filter(job_id__in=ids).retry_all()


def _run_now_batch(db: str, ids: list[int]) -> int:
    scheduled = ScheduledExecution.objects.using(db).filter(job_id__in=ids)
    blocked = BlockedExecution.objects.using(db).filter(job_id__in=ids)
    return scheduled.dispatch_now() + blocked.dispatch_now()


def _discard_batch(db: str, ids: list[int]) -> int:
    return Job.objects.using(db).filter(pk__in=ids).discard_all_in_batches(len(ids))


def _in_batches(
    jobs: QuerySet[Job], size: int, operation: Callable[[str, list[int]], int]
) -> Outcome:
    changed = total = 0
    for ids in id_batches(jobs, size):
        changed += operation(jobs.db, ids)
        total += len(ids)
    logger.info("Admin %s: %d of %d job(s) changed", operation.__name__, changed, total)
    return Outcome(changed, total)
