"""A queue: a name over ready executions, with size, latency and pausing."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import DurationField, ExpressionWrapper, Min

from .. import signals
from ..exceptions import InvalidQueueNameError
from ..options.validation import queue_name_error
from .clock import DatabaseNow
from .pause import Pause
from .ready_execution import ReadyExecution, ReadyExecutionQuerySet


@dataclass(frozen=True, slots=True)
class Queue:
    name: str
    using: str = "default"

    @classmethod
    def all(cls, using: str = "default") -> list[Queue]:
        names = set(ReadyExecution.objects.using(using).queue_names())
        names |= set(Pause.objects.using(using).values_list("queue_name", flat=True))
        return [cls(name, using) for name in sorted(names)]

    def size(self) -> int:
        return self._ready().count()

    def latency(self) -> timedelta:
        """Age of the oldest ready job by the database's clock (not this
        host's); zero when the queue is empty."""
        age = ExpressionWrapper(DatabaseNow() - Min("created_at"), output_field=DurationField())
        value = self._ready().aggregate(age=age)["age"]
        return max(value, timedelta(0)) if value is not None else timedelta(0)

    def is_paused(self) -> bool:
        return Pause.objects.using(self.using).filter(queue_name=self.name).exists()

    def pause(self) -> bool:
        """Stop workers claiming from this queue (enqueueing goes on);
        False if it was paused already.

        Raises ``InvalidQueueNameError`` for a name no task can use.
        """
        error = queue_name_error(self.name)
        if error is not None:
            raise InvalidQueueNameError(error)
        _, created = Pause.objects.using(self.using).get_or_create(queue_name=self.name)
        if created:
            signals.queue_paused.send(sender=Queue, queue=self)
        return created

    def resume(self) -> bool:
        """Let workers claim from this queue again; False if it was not paused."""
        deleted, _ = Pause.objects.using(self.using).filter(queue_name=self.name).delete()
        if deleted:
            signals.queue_resumed.send(sender=Queue, queue=self)
        return bool(deleted)

    def _ready(self) -> ReadyExecutionQuerySet:
        return ReadyExecution.objects.using(self.using).filter(queue_name=self.name)
