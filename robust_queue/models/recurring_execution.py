"""One enqueued slot of a recurring task; the unique index deduplicates."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


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

    class Meta:
        db_table = "robust_queue_recurring_execution"
        constraints = [
            models.UniqueConstraint(
                fields=["task_key", "run_at"], name="rq_recurring_exec_slot"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.task_key} at {self.run_at:%Y-%m-%d %H:%M}"
