"""A recurring task definition: a cron schedule and what to enqueue."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class RecurringTask(models.Model):
    key = models.CharField(max_length=255, unique=True)
    schedule = models.CharField(max_length=255)
    task_path = models.CharField(max_length=255)
    arguments = models.JSONField(default=dict, blank=True)
    queue_name = models.CharField(max_length=64, blank=True, default="")
    priority = models.SmallIntegerField(null=True, blank=True)
    description = models.TextField(blank=True, default="")
    static = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "robust_queue_recurring_task"

    def __str__(self) -> str:
        return f"{self.key} ({self.schedule})"
