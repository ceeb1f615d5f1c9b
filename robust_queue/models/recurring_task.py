"""A recurring task definition: a cron schedule and what to enqueue."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError, models, transaction
from django.utils import timezone

from .. import conf
from ..arguments import decode_arguments
from ..compat import InvalidTask, Task
from ..exceptions import DeserializationError, UnknownTaskError
from ..options.registry import resolve_task
from ..options.slots import Slots
from .job import Job
from .recurring_execution import RecurringExecution
from .sql import dialect_for

if TYPE_CHECKING:
    from ..options.recurrence import RecurringDefinition

logger = logging.getLogger(__name__)

SYNCED_FIELDS = [
    "schedule",
    "task_path",
    "backend_alias",
    "arguments",
    "queue_name",
    "priority",
    "description",
    "static",
    "updated_at",
]


class RecurringTaskQuerySet(models.QuerySet["RecurringTask"]):
    def sync_static(self, definitions: Sequence[RecurringDefinition]) -> None:
        """Make the static rows match ``definitions``, removing the rest.

        An upsert, so schedulers booting together do not collide.
        """
        now = timezone.now()
        rows = [RecurringTask.from_definition(d, now) for d in definitions]
        with transaction.atomic(using=self.db):
            self._replace_runtime_rows([row.key for row in rows])
            if rows:
                self.bulk_create(
                    rows,
                    update_conflicts=True,
                    unique_fields=dialect_for(self.db).upsert_target(["key"]),
                    update_fields=SYNCED_FIELDS,
                )
            gone = self.filter(static=True).exclude(key__in=[row.key for row in rows])
            gone.delete()

    def _replace_runtime_rows(self, declared: list[str]) -> None:
        # A deploy declared a key that a runtime schedule holds: code wins,
        # and the runtime row goes (its own schedule, arguments, switch).
        taken = self.filter(static=False, key__in=declared)
        for key, slots in [(t.key, str(t.slots)) for t in taken]:
            logger.warning(
                "Recurring task %s is now declared in code: its runtime schedule "
                "(%s) is replaced by the declaration",
                key,
                slots,
            )
        taken.delete()


class RecurringTask(models.Model):
    key = models.CharField(max_length=255, unique=True)
    # A cron string, or "" when ``interval`` is set (runtime rows only).
    schedule = models.CharField(max_length=255, blank=True)
    interval = models.DurationField(null=True, blank=True)
    # The IANA zone the cron string is read in; "" for the project's.
    time_zone = models.CharField(max_length=64, blank=True, default="", db_default="")
    task_path = models.CharField(max_length=255)
    backend_alias = models.CharField(max_length=64, default="default")
    arguments = models.JSONField(default=dict, blank=True)
    queue_name = models.CharField(max_length=64, blank=True, default="")
    priority = models.SmallIntegerField(null=True, blank=True)
    description = models.TextField(blank=True, default="")
    static = models.BooleanField(default=True)
    # Kept by ``sync_static``: an operator's switch outlives deploys.
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = RecurringTaskQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_recurring_task"
        permissions = [("toggle_recurringtask", "Can enable and disable recurring tasks")]

    def __str__(self) -> str:
        return f"{self.key} ({self.slots})"

    @property
    def slots(self) -> Slots:
        """When this task runs, read from the loaded fields."""
        return Slots(cron=self.schedule, every=self.interval, time_zone=self.time_zone)

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
        arguments = self.decoded_arguments()
        using = conf.database_for(task.backend)
        with transaction.atomic(using=using):
            if not self._is_enabled_now(using):
                return None
            slot = RecurringExecution.objects.using(using).record_slot(self.key, run_at)
            if slot is None:
                return None
            job = self._enqueue(task, using, arguments)
            slot.job = job
            slot.save(update_fields=["job"])
        logger.info("Enqueued recurring task %s for %s", self.key, run_at.isoformat())
        return job

    def enable(self) -> bool:
        """Let schedulers enqueue this task again, from its next slot on
        (missed slots are not back-filled); False if it was enabled."""
        return self._switch(True)

    def disable(self) -> bool:
        """Stop every scheduler enqueueing this task (run now still works);
        False if it was disabled."""
        return self._switch(False)

    def _switch(self, enabled: bool) -> bool:
        rows = RecurringTask.objects.using(self._state.db or conf.queue_database())
        changed = (
            rows.filter(pk=self.pk)
            .exclude(enabled=enabled)
            .update(enabled=enabled, updated_at=timezone.now())
        )
        self.enabled = enabled
        return changed > 0

    def _is_enabled_now(self, using: str) -> bool:
        # Read in the slot's transaction: a scheduler that planned this
        # slot before an operator disabled the task enqueues nothing.
        return RecurringTask.objects.using(using).filter(pk=self.pk, enabled=True).exists()

    def run_now(self) -> Job | None:
        """Enqueue the task once now, outside its schedule."""
        task = self.get_task()
        return self._enqueue(task, conf.database_for(task.backend), self.decoded_arguments())

    def get_task(self) -> Task[..., Any]:
        """The task to enqueue, with this definition's queue and priority.

        Raises ``UnknownTaskError`` if the path names no allowed task or
        the task refuses this queue or priority.
        """
        task = resolve_task(self.task_path, self.backend_alias)
        options: dict[str, Any] = {}
        if self.queue_name:
            options["queue_name"] = self.queue_name
        if self.priority is not None:
            options["priority"] = self.priority
        try:
            return task.using(**options) if options else task
        except InvalidTask as exc:
            raise UnknownTaskError(
                f"Recurring task {self.key!r} cannot enqueue {self.task_path!r}: {exc}"
            ) from exc

    def decoded_arguments(self) -> tuple[list[Any], dict[str, Any]]:
        """The ``(args, kwargs)`` to enqueue with.

        Raises ``DeserializationError`` naming this task if the stored
        column is not ``{'args': [...], 'kwargs': {...}}`` or its values
        cannot be decoded (a database error stays what it is).
        """
        data = self.arguments or {}
        if not (
            isinstance(data, dict)
            and isinstance(data.get("args", []), list)
            and isinstance(data.get("kwargs", {}), dict)
        ):
            raise DeserializationError(
                f"Recurring task {self.key!r}'s stored arguments are not "
                f"{{'args': [...], 'kwargs': {{...}}}}: {str(data)[:200]!r}"
            )
        try:
            return decode_arguments(data)
        except DatabaseError:
            raise
        except Exception as exc:
            raise DeserializationError(
                f"Recurring task {self.key!r}'s arguments cannot be decoded: {exc}"
            ) from exc

    def _enqueue(
        self, task: Task[..., Any], using: str, arguments: tuple[list[Any], dict[str, Any]]
    ) -> Job | None:
        args, kwargs = arguments
        result = task.enqueue(*args, **kwargs)
        # None when a concurrency limit discarded the job.
        return Job.objects.using(using).filter(result_id=result.id).first()
