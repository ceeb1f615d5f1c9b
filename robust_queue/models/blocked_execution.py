"""A job over its concurrency limit, waiting for a semaphore slot."""

from __future__ import annotations

from django.db import models

from .execution import Execution, job_field


class BlockedExecution(Execution):
    job = job_field("blocked_execution")
    queue_name = models.CharField(max_length=64)
    priority = models.SmallIntegerField(default=0)
    concurrency_key = models.CharField(max_length=255)
    expires_at = models.DateTimeField()

    class Meta:
        db_table = "robust_queue_blocked_execution"
        indexes = [
            models.Index(
                fields=["concurrency_key", "-priority", "job"],
                name="rq_blocked_key_poll",
            ),
            models.Index(
                fields=["expires_at", "concurrency_key"], name="rq_blocked_expiry"
            ),
        ]
