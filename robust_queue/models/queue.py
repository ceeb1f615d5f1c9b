"""A queue: a name over ready executions, with size, latency and pausing."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Min
from django.utils import timezone

from .pause import Pause
from .ready_execution import ReadyExecution


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
        """Age of the oldest ready job; zero when the queue is empty."""
        oldest = self._ready().aggregate(oldest=Min("created_at"))["oldest"]
        return timezone.now() - oldest if oldest else timedelta(0)

    def is_paused(self) -> bool:
        return Pause.objects.using(self.using).filter(queue_name=self.name).exists()

    def pause(self) -> None:
        Pause.objects.using(self.using).get_or_create(queue_name=self.name)

    def resume(self) -> None:
        Pause.objects.using(self.using).filter(queue_name=self.name).delete()

    def _ready(self):  # type: ignore[no-untyped-def]
        return ReadyExecution.objects.using(self.using).filter(queue_name=self.name)
