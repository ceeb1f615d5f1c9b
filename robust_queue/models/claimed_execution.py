"""A job a worker is running; finalizing it is fenced by this row's lock."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.db import DatabaseError, connections, models, transaction
from django.utils import timezone

from .. import conf
from ..retries import retry_at_for_job
from .blocked_execution import BlockedExecution
from .execution import Execution, job_field
from .failed_execution import FailedExecution, error_record
from .job import Job
from .short_transaction import short_transaction
from .sql import Statements

logger = logging.getLogger(__name__)


class ClaimedExecutionQuerySet(models.QuerySet["ClaimedExecution"]):
    def orphaned(self) -> ClaimedExecutionQuerySet:
        """Claims whose process is no longer registered."""
        from .process import Process  # noqa: PLC0415 - process imports us

        live = Process.objects.using(self.db).filter(pk=models.OuterRef("process_id"))
        return self.filter(~models.Exists(live))

    def release_all(self) -> int:
        """Put every claim of this queryset back to ready."""
        return sum(claimed.release() for claimed in self.select_related("job"))

    def fail_all_with(self, error_class: type[BaseException], message: str) -> int:
        """Fail every claim of this queryset with one error, e.g. a crash.

        The task's retry policy decides whether the job runs again.
        """
        exc = error_class(message)
        error = error_record(exc)
        return sum(
            claimed.fail(error, retry_at_for_job(claimed.job, exc))
            for claimed in self.select_related("job")
        )


class ClaimedExecution(Execution):
    job = job_field("claimed_execution")
    # No constraint: a claim outlives its process row until it is failed.
    process = models.ForeignKey(
        "robust_queue.Process",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="claimed_executions",
    )

    objects = ClaimedExecutionQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_claimed_execution"
        indexes = [
            models.Index(fields=["process", "job"], name="rq_claimed_process"),
        ]

    def finish(self, return_value: Any) -> bool:
        """Record success once; False if the claim is already gone."""
        using = self._state.db or "default"
        now = timezone.now()
        if not self._finish_rows(using, now, return_value):
            return False
        self.job.finished_at = now
        self.job.return_value = return_value
        self._release_slot(using)
        return True

    def _finish_rows(self, using: str, now: datetime, return_value: Any) -> bool:
        statements = Statements(connections[using])
        if not conf.preserve_finished_jobs():
            with transaction.atomic(using=using):
                if not self._take(using):
                    return False
                Job.objects.using(using).filter(pk=self.job_id).delete()
            return True
        if statements.is_postgresql:
            with statements.connection.cursor() as cursor:
                cursor.execute(*statements.finish_in_one(self.pk, now, return_value))
                return cursor.rowcount == 1
        with short_transaction(using):
            if not self._take(using):
                return False
            with statements.connection.cursor() as cursor:
                cursor.execute(*statements.finish_job(self.job_id, now, return_value))
        return True

    def fail(self, error: dict[str, str], retry_at: datetime | None = None) -> bool:
        """Record one failed attempt once; retry at ``retry_at`` if given."""
        using = self._state.db or "default"
        with transaction.atomic(using=using):
            if not self._take(using):
                return False
            job = Job.objects.using(using).select_for_update().get(pk=self.job_id)
            job.errors = [*job.errors, error]
            if retry_at is None:
                job.save(update_fields=["errors"])
                FailedExecution.objects.using(using).create(job=job, error=error)
            else:
                job.run_after = retry_at
                job.save(update_fields=["errors", "run_after"])
                Job.objects.using(using).dispatch_all([job])
        self.job.errors = job.errors
        self._release_slot(using)
        return True

    def release(self) -> bool:
        """Give the job back to ready without counting a failure."""
        using = self._state.db or "default"
        with transaction.atomic(using=using):
            if not self._take(using):
                return False
            # The job keeps the concurrency slot it was claimed with.
            Job.objects.using(using).dispatch_all(
                [self.job], immediately=True, bypass_concurrency=True
            )
        return True

    def _release_slot(self, using: str) -> None:
        # After commit: a failure here must not undo the finalization;
        # concurrency maintenance releases what is left blocked.
        try:
            BlockedExecution.objects.using(using).release_slot_of(self.job)
        except DatabaseError:
            logger.exception(
                "Releasing the concurrency slot of job %s failed", self.job_id
            )

    def _take(self, using: str) -> bool:
        """Delete this claim; True only for the transition that removed it.

        The DELETE locks the row: a concurrent finalize, release or prune
        waits, then deletes nothing, so exactly one of them goes on. Plain
        SQL: nothing refers to a claim, so Django's delete collector (its
        most expensive statement here) has nothing to do.
        """
        statements = Statements(connections[using])
        with statements.connection.cursor() as cursor:
            cursor.execute(*statements.delete_claim(self.pk))
            return cursor.rowcount == 1

    def perform(self) -> bool:
        """Run the job's task and finalize it; True if this call did."""
        # performing imports the models package, which imports this module.
        from ..performing import perform  # noqa: PLC0415

        return perform(self)
