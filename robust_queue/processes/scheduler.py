"""The scheduler: enqueues each slot of every recurring task once.

``boot()`` syncs the declared (static) definitions to ``recurring_task``
rows; ``run_once()`` enqueues the slots that are due and says how long to
sleep. Any number of schedulers may run: the dedup row of each slot is
written with its job, so exactly one of them enqueues it.

A slot missed while no scheduler ran is not back-filled; with
``catch_up=True`` the last missed slot (within the dedup retention) is
enqueued at boot.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import DatabaseError
from django.utils import timezone

from .. import conf, recurrence
from ..exceptions import RobustQueueError
from ..models import RecurringExecution, RecurringTask

logger = logging.getLogger(__name__)

DEFAULT_POLLING_INTERVAL = 60.0
DEFAULT_DEDUP_RETENTION = timedelta(days=7)
# How often the dedup rows past their retention are cleared.
CLEAR_EVERY = timedelta(hours=1)
# Slots skipped at most when a scheduler wakes up late (no back-fill).
MAX_SKIPPED_SLOTS = 100_000


@dataclass(slots=True)
class _Next:
    task: RecurringTask
    run_at: datetime


class Scheduler:
    """Enqueue recurring tasks; call ``boot()`` once, then ``run_once()``."""

    kind = "scheduler"

    def __init__(
        self,
        *,
        using: str | None = None,
        polling_interval: float = DEFAULT_POLLING_INTERVAL,
        catch_up: bool = False,
        dedup_retention: timedelta | None = None,
    ) -> None:
        self.using = using or conf.queue_database()
        self.polling_interval = polling_interval
        self.catch_up = catch_up
        self.dedup_retention = dedup_retention or _dedup_retention()
        self._next: dict[str, _Next] = {}
        self._cleared_at: datetime | None = None

    @property
    def metadata(self) -> dict[str, object]:
        return {"recurring_tasks": sorted(self._next)}

    def boot(self, now: datetime | None = None) -> None:
        """Sync static definitions and plan the first slots.

        Raises ``ConfigurationError`` for invalid recurring tasks.
        """
        now = now or timezone.now()
        RecurringTask.objects.using(self.using).sync_static(recurrence.definitions())
        self._reload(now)
        if self.catch_up:
            self._catch_up(now)

    def run_once(self, now: datetime | None = None) -> float:
        """Enqueue due slots; return the seconds until the next one."""
        now = now or timezone.now()
        self._reload(now)
        for planned in self._next.values():
            if planned.run_at <= now:
                slot = _latest_slot(planned.task.schedule, planned.run_at, now)
                self._enqueue(planned.task, slot)
                planned.run_at = recurrence.next_time(planned.task.schedule, slot)
        self._clear_old_slots(now)
        soonest = min((p.run_at for p in self._next.values()), default=None)
        wait = self.polling_interval
        if soonest is not None:
            wait = min(wait, (soonest - timezone.now()).total_seconds())
        return max(wait, 0.0)

    def run(self, stop: threading.Event) -> None:
        """Boot, then loop until ``stop`` is set (for thread mode)."""
        self.boot()
        while not stop.is_set():
            stop.wait(self.run_once())

    def _reload(self, now: datetime) -> None:
        # Rows may change under us (another scheduler's sync, the admin):
        # keep the plan of unchanged tasks, plan new ones from now.
        tasks = {t.key: t for t in RecurringTask.objects.using(self.using).all()}
        planned = {}
        for key, task in tasks.items():
            current = self._next.get(key)
            if current is not None and current.task.schedule == task.schedule:
                planned[key] = _Next(task, current.run_at)
            else:
                planned[key] = _Next(task, recurrence.next_time(task.schedule, now))
        self._next = planned

    def _catch_up(self, now: datetime) -> None:
        for planned in self._next.values():
            missed = recurrence.previous_time(planned.task.schedule, now)
            if missed >= now - self.dedup_retention:
                self._enqueue(planned.task, missed)

    def _enqueue(self, task: RecurringTask, run_at: datetime) -> None:
        # One bad task must not stop the others.
        try:
            task.enqueue(run_at)
        except (RobustQueueError, DatabaseError, TypeError, ValueError):
            logger.exception("Recurring task %s could not be enqueued", task.key)

    def _clear_old_slots(self, now: datetime) -> None:
        if self._cleared_at is not None and now - self._cleared_at < CLEAR_EVERY:
            return
        self._cleared_at = now
        executions = RecurringExecution.objects.using(self.using)
        executions.clear_in_batches(older_than=self.dedup_retention)


def _latest_slot(schedule: str, first: datetime, now: datetime) -> datetime:
    """The last slot at or before ``now``, starting from ``first``."""
    slot = first
    for _ in range(MAX_SKIPPED_SLOTS):
        following = recurrence.next_time(schedule, slot)
        if following > now:
            break
        slot = following
    return slot


def _dedup_retention() -> timedelta:
    value = conf.setting("clear_recurring_executions_after", DEFAULT_DEDUP_RETENTION)
    return value if isinstance(value, timedelta) else timedelta(seconds=float(value))
