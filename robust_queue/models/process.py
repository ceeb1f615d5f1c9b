"""A registered supervisor, worker, dispatcher or scheduler."""

from __future__ import annotations

from datetime import timedelta

from django.db import models
from django.utils import timezone


class ProcessKind(models.TextChoices):
    SUPERVISOR = "supervisor", "Supervisor"
    WORKER = "worker", "Worker"
    DISPATCHER = "dispatcher", "Dispatcher"
    SCHEDULER = "scheduler", "Scheduler"


class ProcessQuerySet(models.QuerySet["Process"]):
    def stale(self, threshold: float) -> ProcessQuerySet:
        """Processes whose last heartbeat is older than ``threshold`` s."""
        cutoff = timezone.now() - timedelta(seconds=threshold)
        return self.filter(last_heartbeat_at__lt=cutoff)


class Process(models.Model):
    kind = models.CharField(max_length=16, choices=ProcessKind.choices)
    name = models.CharField(max_length=128)
    pid = models.IntegerField()
    hostname = models.CharField(max_length=255, blank=True, default="")
    supervisor = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="supervisees",
    )
    last_heartbeat_at = models.DateTimeField(default=timezone.now)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = ProcessQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_process"
        verbose_name_plural = "processes"
        indexes = [
            models.Index(fields=["last_heartbeat_at"], name="rq_process_heartbeat"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["name", "supervisor"], name="rq_process_name_supervisor"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"
