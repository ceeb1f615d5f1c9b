"""One enqueued slot of a recurring task; the unique index deduplicates."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import IntegrityError, models, transaction
from django.utils import timezone

from .batching import drain
from .clock import DatabaseNow

DEFAULT_BATCH_SIZE = 500


class RecurringExecutionQuerySet(models.QuerySet["RecurringExecution"]):
    def record_slot(self, task_key: str, run_at: datetime) -> RecurringExecution | None:
        """Insert the dedup row of one slot; None if it already exists.

        A concurrent scheduler inserting the same slot waits here until
        the first one's transaction ends, then gets None.
        """
        try:
            with transaction.atomic(using=self.db):
                return self.create(task_key=task_key, run_at=run_at)
        except IntegrityError:
            return None

    def clear_in_batches(self, older_than: timedelta, batch_size: int = DEFAULT_BATCH_SIZE) -> int:
        """Delete dedup rows of slots older than ``older_than`` (by the
        database's clock, which chose the slots)."""
        old = self.filter(run_at__lt=DatabaseNow() - older_than).order_by("pk")
        return drain(lambda: self._delete_batch(old, batch_size), batch_size)

    def _delete_batch(self, rows: RecurringExecutionQuerySet, batch_size: int) -> int:
        with transaction.atomic(using=self.db):
            pks = list(rows.values_list("pk", flat=True)[:batch_size])
            self.filter(pk__in=pks).delete()
        return len(pks)


class RecurringExecution(models.Model):
    # No foreign key constraint: the dedup row outlives job clearing.
    job = models.ForeignKey(
        "robust_queue.Job",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    task_key = models.CharField(max_length=255)
    run_at = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now)

    objects = RecurringExecutionQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_recurring_execution"
        constraints = [
            models.UniqueConstraint(fields=["task_key", "run_at"], name="rq_recurring_exec_slot"),
        ]
        indexes = [models.Index(fields=["run_at"], name="rq_recurring_exec_run_at")]

    def __str__(self) -> str:
        return f"{self.task_key} at {self.run_at:%Y-%m-%d %H:%M}"
