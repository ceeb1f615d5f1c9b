"""A concurrency slot counter per key, with a lease that expires."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class Semaphore(models.Model):
    key = models.CharField(max_length=255, unique=True)
    value = models.IntegerField()
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "robust_queue_semaphore"
        indexes = [models.Index(fields=["expires_at"], name="rq_semaphore_expires")]

    def __str__(self) -> str:
        return f"semaphore {self.key}={self.value}"
