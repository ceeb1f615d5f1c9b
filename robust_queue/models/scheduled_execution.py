"""A job waiting for its ``run_after`` time; dispatchers move it on."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import models, transaction

from .clock import DatabaseNow
from .execution import Execution, delete_by_pk, dispatch_now, job_field, lock_with_jobs
from .job import Job


class ScheduledExecutionQuerySet(models.QuerySet["ScheduledExecution"]):
    def create_all(self, jobs: Sequence[Job]) -> list[ScheduledExecution]:
        """Schedule ``jobs`` at their ``run_after``; caller holds the transaction."""
        return self.bulk_create(
            [
                ScheduledExecution(
                    job=job,
                    queue_name=job.queue_name,
                    priority=job.priority,
                    scheduled_at=job.run_after or DatabaseNow(),
                )
                for job in jobs
            ]
        )

    def due(self) -> ScheduledExecutionQuerySet:
        """Rows whose time has come by the database's clock."""
        return self.filter(scheduled_at__lte=DatabaseNow())

    def dispatch_next_batch(self, batch_size: int) -> int:
        """Move up to ``batch_size`` due jobs on; return how many moved.

        Rows locked by another dispatcher are skipped, so any number of
        dispatchers share the work without dispatching a job twice.
        """
        with transaction.atomic(using=self.db):
            due = self.due().order_by("scheduled_at", "-priority", "job_id")
            rows = lock_with_jobs(due, batch_size)
            if not rows:
                return 0
            delete_by_pk(self, [row.pk for row in rows])
            # The scheduled row's time is what counted, not run_after.
            Job.objects.using(self.db).dispatch_all([row.job for row in rows], immediately=True)
        return len(rows)

    def dispatch_now(self) -> int:
        """Dispatch every row of this queryset at once ("run now")."""
        return dispatch_now(self)


class ScheduledExecution(Execution):
    job = job_field("scheduled_execution")
    queue_name = models.CharField(max_length=64)
    priority = models.SmallIntegerField(default=0)
    scheduled_at = models.DateTimeField()

    objects = ScheduledExecutionQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_scheduled_execution"
        indexes = [
            models.Index(fields=["scheduled_at", "-priority", "job"], name="rq_scheduled_due"),
        ]
