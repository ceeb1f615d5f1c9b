"""A paused queue: workers skip it; enqueueing goes on."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class Pause(models.Model):
    queue_name = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "robust_queue_pause"

    def __str__(self) -> str:
        return f"pause of {self.queue_name}"
