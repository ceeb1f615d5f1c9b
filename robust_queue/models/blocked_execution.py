"""A job over its concurrency limit, waiting for a semaphore slot."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.db import models, transaction

from ..options.rate_limits import WAITING_PREFIX
from .clock import DatabaseNow
from .execution import Execution, delete_by_pk, job_field, lock_with_jobs
from .job import Job
from .job_dependency import WAITING_KEY
from .semaphore import Semaphore, SemaphoreQuerySet

if TYPE_CHECKING:
    from ..options.concurrency import ConcurrencyLimit

logger = logging.getLogger(__name__)

# Maintenance releases at most this many jobs of one key per pass.
MAX_RELEASES_PER_KEY = 100


class BlockedExecutionQuerySet(models.QuerySet["BlockedExecution"]):
    def acquire_or_block(self, jobs: Sequence[Job]) -> tuple[list[Job], list[Job]]:
        """Take a slot for each limited job; return the jobs that got one,
        and the jobs that were discarded.

        The others are blocked, or deleted (discarded) when their limit says
        ``on_conflict="discard"``. The caller holds the transaction.
        """
        acquired, blocked, discarded = [], [], []
        # Semaphores are locked in key order so that two bulk enqueues
        # cannot deadlock; within a key the jobs keep their order.
        for job in sorted(jobs, key=lambda job: job.concurrency_key):
            limit = job.concurrency_limit()
            if limit is None or self._semaphores().wait(job.concurrency_key, limit.to, limit.lease):
                acquired.append(job)
            elif limit.on_conflict == "discard":
                discarded.append(job)
            else:
                blocked.append(self._blocked_row(job, limit))
        self.bulk_create(blocked)
        if discarded:
            logger.info(
                "Discarded %d job(s) over their concurrency limit: %s",
                len(discarded),
                ", ".join(job.result_id for job in discarded),
            )
            Job.objects.using(self.db).filter(pk__in=[j.pk for j in discarded]).delete()
        return acquired, discarded

    def release_one(self, key: str) -> bool:
        """Make the next blocked job of ``key`` ready if a slot is free."""
        with transaction.atomic(using=self.db):
            rows = self.filter(concurrency_key=key).order_by("-priority", "job_id")
            locked = lock_with_jobs(rows, 1)
            if not locked:
                return False
            row = locked[0]
            limit = row.job.concurrency_limit()
            if limit is not None and not self._semaphores().wait(key, limit.to, limit.lease):
                return False
            delete_by_pk(self, [row.pk])
            Job.objects.using(self.db).dispatch_all(
                [row.job], immediately=True, bypass_concurrency=True
            )
        return True

    def release_slot_of(self, job: Job) -> None:
        """Give back ``job``'s slot and unblock the next job of its key.

        Called after the transition that ended the job has committed.
        """
        if not job.concurrency_key:
            return
        limit = job.concurrency_limit()
        if limit is not None:
            self._semaphores().signal(job.concurrency_key, limit.to, limit.lease)
        self.release_one(job.concurrency_key)

    def release_all_with_room(self) -> int:
        """Release blocked jobs whose key has a free or expired slot."""
        now = DatabaseNow()
        full = self._semaphores().filter(value__lt=1, expires_at__gte=now)
        # Jobs waiting for a rate limit or for other jobs are the
        # dispatcher's (rate_limit.py, job_dependency.py).
        keys = (
            self.exclude(concurrency_key__startswith=WAITING_PREFIX)
            .exclude(concurrency_key=WAITING_KEY)
            .filter(
                models.Q(expires_at__lt=now) | ~models.Q(concurrency_key__in=full.values("key"))
            )
            .values_list("concurrency_key", flat=True)
            .distinct()
        )
        released = 0
        for key in sorted(set(keys)):
            for _ in range(MAX_RELEASES_PER_KEY):
                if not self.release_one(key):
                    break
                released += 1
        return released

    def dispatch_now(self) -> int:
        """Run every job of this queryset now, outside its limit.

        The jobs lose their concurrency and rate keys, so finishing them
        frees no slot they never took ("run now" is an operator's override).
        """
        with transaction.atomic(using=self.db):
            locked = lock_with_jobs(self.order_by("job_id"))
            delete_by_pk(self, [row.pk for row in locked])
            jobs = [row.job for row in locked]
            for job in jobs:
                job.concurrency_key = job.rate_key = ""
            Job.objects.using(self.db).bulk_update(jobs, ["concurrency_key", "rate_key"])
            Job.objects.using(self.db).dispatch_all(jobs, immediately=True)
        return len(locked)

    def _semaphores(self) -> SemaphoreQuerySet:
        return Semaphore.objects.using(self.db)

    def _blocked_row(self, job: Job, limit: ConcurrencyLimit) -> BlockedExecution:
        return BlockedExecution(
            job=job,
            queue_name=job.queue_name,
            priority=job.priority,
            concurrency_key=job.concurrency_key,
            expires_at=DatabaseNow() + limit.lease,
        )


class BlockedExecution(Execution):
    job = job_field("blocked_execution")
    queue_name = models.CharField(max_length=64)
    priority = models.SmallIntegerField(default=0)
    concurrency_key = models.CharField(max_length=255)
    expires_at = models.DateTimeField()

    objects = BlockedExecutionQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_blocked_execution"
        indexes = [
            models.Index(
                fields=["concurrency_key", "-priority", "job"],
                name="rq_blocked_key_poll",
            ),
            models.Index(fields=["expires_at", "concurrency_key"], name="rq_blocked_expiry"),
        ]
