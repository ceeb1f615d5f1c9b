"""Retention: clearing old finished and failed jobs in small batches.

Each batch is its own short transaction, so clearing never holds locks
that claimers wait on for long. Only finished jobs and failed jobs (whose
failed execution is locked first, so a concurrent retry wins) are ever
deleted: cleanup never deletes unfinished work.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from . import conf
from .models import FailedExecution, Job

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 500


@dataclass(frozen=True, slots=True, kw_only=True)
class Retention:
    """What to clear: jobs finished or failed longer ago than these."""

    finished_older_than: timedelta | None
    failed_older_than: timedelta | None = None
    task_path: str | None = None
    batch_size: int = DEFAULT_BATCH_SIZE

    @classmethod
    def from_settings(cls) -> Retention:
        """``clear_finished_jobs_after`` / ``clear_failed_jobs_after``."""
        return cls(
            finished_older_than=conf.clear_finished_jobs_after(),
            failed_older_than=conf.clear_failed_jobs_after(),
        )

    def clear(self, using: str, *, dry_run: bool = False) -> dict[str, int]:
        """Clear (or with ``dry_run`` count) what this retention covers."""
        counts = {"finished": 0, "failed": 0}
        if self.finished_older_than is not None:
            jobs = self._finished(using)
            counts["finished"] = jobs.count() if dry_run else self._clear_finished(jobs)
        if self.failed_older_than is not None:
            failed = self._failed(using)
            counts["failed"] = failed.count() if dry_run else self._clear_failed(failed)
        if not dry_run and any(counts.values()):
            logger.info(
                "Cleared %d finished and %d failed job(s)",
                counts["finished"],
                counts["failed"],
            )
        return counts

    def _finished(self, using: str) -> QuerySet[Job]:
        assert self.finished_older_than is not None
        cutoff = timezone.now() - self.finished_older_than
        jobs = Job.objects.using(using).filter(finished_at__lt=cutoff)
        return jobs.filter(task_path=self.task_path) if self.task_path else jobs

    def _failed(self, using: str) -> QuerySet[FailedExecution]:
        assert self.failed_older_than is not None
        cutoff = timezone.now() - self.failed_older_than
        rows = FailedExecution.objects.using(using).filter(created_at__lt=cutoff)
        return rows.filter(job__task_path=self.task_path) if self.task_path else rows

    def _clear_finished(self, jobs: QuerySet[Job]) -> int:
        # A finished job never moves again: no lock is needed.
        cleared = 0
        while True:
            pks = list(jobs.order_by("pk").values_list("pk", flat=True)[: self.batch_size])
            if pks:
                Job.objects.using(jobs.db).filter(pk__in=pks, finished_at__isnull=False).delete()
            cleared += len(pks)
            if len(pks) < self.batch_size:
                return cleared

    def _clear_failed(self, rows: QuerySet[FailedExecution]) -> int:
        cleared = 0
        while True:
            with transaction.atomic(using=rows.db):
                locked = rows.order_by("pk").select_for_update(skip_locked=True)
                job_ids = list(locked.values_list("job_id", flat=True)[: self.batch_size])
                Job.objects.using(rows.db).filter(pk__in=job_ids).delete()
            cleared += len(job_ids)
            if len(job_ids) < self.batch_size:
                return cleared


def clear_expired(using: str | None = None) -> dict[str, int]:
    """Apply the configured retention (built-in maintenance calls this)."""
    return Retention.from_settings().clear(using or conf.queue_database())
