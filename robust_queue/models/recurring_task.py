"""A recurring task definition: a cron schedule and what to enqueue."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import connections, models, transaction
from django.utils import timezone

from .. import conf
from ..arguments import decode_arguments
from ..compat import Task
from ..registry import resolve_task
from .job import Job
from .recurring_execution import RecurringExecution

if TYPE_CHECKING:
    from ..recurrence import RecurringDefinition

logger = logging.getLogger(__name__)

SYNCED_FIELDS = [
    "schedule", "task_path", "backend_alias", "arguments", "queue_name",
    "priority", "description", "static", "updated_at",
]


class RecurringTaskQuerySet(models.QuerySet["RecurringTask"]):
    def sync_static(self, definitions: Sequence[RecurringDefinition]) -> None:
        """Make the static rows match ``definitions``, removing the rest.

        An upsert, so schedulers booting together do not collide.
        """
        now = timezone.now()
        rows = [RecurringTask.from_definition(d, now) for d in definitions]
        with transaction.atomic(using=self.db):
            if rows:
                self.bulk_create(
                    rows,
                    update_conflicts=True,
                    unique_fields=["key"] if self._with_target() else None,
                    update_fields=SYNCED_FIELDS,
                )
            gone = self.filter(static=True).exclude(key__in=[row.key for row in rows])
            gone.delete()

    def _with_target(self) -> bool:
        return bool(connections[self.db].features.supports_update_conflicts_with_target)


class RecurringTask(models.Model):
    key = models.CharField(max_length=255, unique=True)
    schedule = models.CharField(max_length=255)
    task_path = models.CharField(max_length=255)
    backend_alias = models.CharField(max_length=64, default="default")
    arguments = models.JSONField(default=dict, blank=True)
    queue_name = models.CharField(max_length=64, blank=True, default="")
    priority = models.SmallIntegerField(null=True, blank=True)
    description = models.TextField(blank=True, default="")
    static = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = RecurringTaskQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_recurring_task"

    def __str__(self) -> str:
        return f"{self.key} ({self.schedule})"

    @classmethod
    def from_definition(cls, definition: RecurringDefinition, now: datetime) -> RecurringTask:
        return cls(
            key=definition.key,
            schedule=definition.schedule,
            task_path=definition.task_path,
            backend_alias=definition.backend,
            arguments=definition.arguments,
            queue_name=definition.queue_name,
            priority=definition.priority,
            description=definition.description,
            static=True,
            updated_at=now,
        )

    def enqueue(self, run_at: datetime) -> Job | None:
        """Enqueue the slot at ``run_at`` unless a scheduler already did.

        The dedup row and the job are written in one transaction, so any
        number of schedulers enqueue each slot exactly once.
        """
        task = self.get_task()
        using = conf.database_for(task.backend)
        with transaction.atomic(using=using):
            slot = RecurringExecution.objects.using(using).record_slot(self.key, run_at)
            if slot is None:
                return None
            job = self._enqueue(task, using)
            slot.job = job
            slot.save(update_fields=["job"])
        logger.info("Enqueued recurring task %s for %s", self.key, run_at.isoformat())
        return job

    def run_now(self) -> Job | None:
        """Enqueue the task once now, outside its schedule."""
        task = self.get_task()
        return self._enqueue(task, conf.database_for(task.backend))

    def get_task(self) -> Task:
        """The task to enqueue, with this definition's queue and priority.

        Raises ``UnknownTaskError`` if the path names no allowed task.
        """
        task = resolve_task(self.task_path, self.backend_alias)
        options: dict[str, Any] = {}
        if self.queue_name:
            options["queue_name"] = self.queue_name
        if self.priority is not None:
            options["priority"] = self.priority
        return task.using(**options) if options else task

    def _enqueue(self, task: Task, using: str) -> Job | None:
        args, kwargs = decode_arguments(self.arguments or {})
        result = task.enqueue(*args, **kwargs)
        # None when a concurrency limit discarded the job.
        return Job.objects.using(using).filter(result_id=result.id).first()
