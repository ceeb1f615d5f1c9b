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
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import DatabaseError

from .. import conf
from ..exceptions import DeserializationError, RobustQueueError, UnknownTaskError
from ..models import RecurringExecution, RecurringTask
from ..models.clock import database_now
from ..options import recurrence
from .base import Runnable
from .config import SchedulerConfig

logger = logging.getLogger(__name__)

# The defaults of a scheduler built without a configuration (tests, shell).
_DEFAULTS = SchedulerConfig()
# How often the dedup rows past their retention are cleared.
CLEAR_EVERY = timedelta(hours=1)


@dataclass(slots=True)
class _Next:
    task: RecurringTask
    run_at: datetime


class Scheduler:
    """Enqueue recurring tasks; call ``boot()`` once, then ``run_once()``."""

    def __init__(
        self,
        *,
        using: str | None = None,
        polling_interval: float = _DEFAULTS.polling_interval,
        catch_up: bool = _DEFAULTS.catch_up,
        dedup_retention: timedelta | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.using = using or conf.queue_database()
        self.polling_interval = polling_interval
        self.catch_up = catch_up
        self.dedup_retention = dedup_retention or conf.get(conf.CLEAR_RECURRING_EXECUTIONS_AFTER)
        # Measures how long a tick took, to take it off the wait.
        self._monotonic = monotonic
        self._next: dict[str, _Next] = {}
        # Keys whose row cannot be enqueued (unknown task, malformed
        # arguments) -> the row's values then; skipped until they change.
        self._disabled: dict[str, tuple[Any, ...]] = {}
        self._cleared_at: datetime | None = None

    @property
    def planned(self) -> list[str]:
        """Keys of the recurring tasks this scheduler will enqueue."""
        return sorted(self._next)

    def boot(self, now: datetime | None = None) -> None:
        """Sync static definitions and plan the first slots.

        Raises ``ConfigurationError`` for invalid recurring tasks.
        """
        now = now or database_now(self.using)
        RecurringTask.objects.using(self.using).sync_static(recurrence.definitions())
        self._reload(now)
        if self.catch_up:
            self._catch_up(now)

    def run_once(self, now: datetime | None = None) -> float:
        """Enqueue due slots; return the seconds until the next one.

        Slots are due by the database's clock, read once per tick.
        """
        started = self._monotonic()
        now = now or database_now(self.using)
        self._reload(now)
        for planned in self._next.values():
            if planned.run_at <= now:
                slot = planned.task.slots.latest(planned.run_at, now)
                self._enqueue(planned.task, slot)
                planned.run_at = planned.task.slots.next_after(slot)
        self._clear_old_slots(now)
        soonest = min((p.run_at for p in self._next.values()), default=None)
        wait = self.polling_interval
        if soonest is not None:
            until = (soonest - now).total_seconds() - (self._monotonic() - started)
            wait = min(wait, until)
        return max(wait, 0.0)

    def _reload(self, now: datetime) -> None:
        # Rows may change under us (another scheduler's sync, the admin,
        # the schedules API): one query a tick keeps the plan of unchanged
        # tasks and plans new or rescheduled ones from now. A task an
        # operator disabled or removed drops out; back, it starts afresh.
        enabled = RecurringTask.objects.using(self.using).filter(enabled=True)
        tasks = {t.key: t for t in enabled}
        tasks = {key: t for key, t in tasks.items() if not self._is_disabled(t)}
        planned = {}
        for key, task in tasks.items():
            current = self._next.get(key)
            if current is not None and current.task.slots == task.slots:
                planned[key] = _Next(task, current.run_at)
                continue
            try:
                planned[key] = _Next(task, task.slots.next_after(now))
            except (ValueError, LookupError) as exc:
                # A row written past validation (by hand, by newer code).
                self._disable(task, exc, "its row's schedule is fixed")
        self._next = planned

    def _catch_up(self, now: datetime) -> None:
        for planned in self._next.values():
            missed = planned.task.slots.previous_before(now)
            if missed >= now - self.dedup_retention:
                self._enqueue(planned.task, missed)

    def _enqueue(self, task: RecurringTask, run_at: datetime) -> None:
        # One bad task must not stop the others.
        try:
            task.enqueue(run_at)
        except UnknownTaskError as exc:
            self._disable(task, exc, "its row names a known task")
        except DeserializationError as exc:
            self._disable(task, exc, "its row's arguments are fixed")
        except (RobustQueueError, DatabaseError, TypeError, ValueError):
            logger.exception("Recurring task %s could not be enqueued", task.key)

    def _disable(self, task: RecurringTask, error: Exception, until: str) -> None:
        # Logged once, without a traceback: every later slot would fail the
        # same way until the row changes. Only here, never on the row: in
        # a rolling deploy an old scheduler may not know a task that new
        # code declared, and must not switch it off for every scheduler.
        self._disabled[task.key] = _fingerprint(task)
        logger.error(
            "Recurring task %s is disabled in this scheduler until %s: %s",
            task.key,
            until,
            error,
        )

    def _is_disabled(self, task: RecurringTask) -> bool:
        failed = self._disabled.get(task.key)
        if failed is None:
            return False
        if failed == _fingerprint(task):
            return True
        # The row changed: it starts afresh from now, like a task an
        # operator enabled again (no slot missed meanwhile is enqueued).
        del self._disabled[task.key]
        self._next.pop(task.key, None)
        return False

    def _clear_old_slots(self, now: datetime) -> None:
        if self._cleared_at is not None and now - self._cleared_at < CLEAR_EVERY:
            return
        self._cleared_at = now
        executions = RecurringExecution.objects.using(self.using)
        executions.clear_in_batches(older_than=self.dedup_retention)


class SchedulerProcess(Runnable):
    """The scheduler role: runs a ``Scheduler`` as a registered process."""

    kind = "scheduler"

    def __init__(self, config: SchedulerConfig, **kwargs: Any) -> None:
        self.config = config
        super().__init__(**kwargs)
        self.scheduler = Scheduler(
            using=self.using,
            polling_interval=config.polling_interval,
            catch_up=config.catch_up,
        )

    @property
    def metadata(self) -> dict[str, Any]:
        return {"polling_interval": self.config.polling_interval}

    def boot(self) -> None:
        self.scheduler.boot()

    def run_once(self) -> float:
        return self.scheduler.run_once()


def _fingerprint(task: RecurringTask) -> tuple[Any, ...]:
    """What a disabled row must change for this scheduler to try it again."""
    return (
        task.task_path,
        task.backend_alias,
        task.arguments,
        task.queue_name,
        task.priority,
        task.slots,
    )
