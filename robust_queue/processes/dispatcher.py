"""The dispatcher: moves due scheduled jobs to ready, releases jobs waiting
for a rate limit whose window opened and jobs whose parents have settled
(or fails them), completes batches, and runs concurrency upkeep (as Solid
Queue's dispatcher does, through an owned ``ConcurrencyMaintenance``)."""

from __future__ import annotations

import time
from typing import Any

from ..models import (
    Batch,
    BlockedExecution,
    JobDependency,
    RateLimit,
    ScheduledExecution,
    Semaphore,
)
from .base import Runnable
from .config import DispatcherConfig


class Dispatcher(Runnable):
    kind = "dispatcher"

    def __init__(self, config: DispatcherConfig, **kwargs: Any) -> None:
        self.config = config
        super().__init__(**kwargs)
        self.concurrency_maintenance = ConcurrencyMaintenance(
            self.using, config.concurrency_maintenance_interval
        )

    @property
    def metadata(self) -> dict[str, Any]:
        return {
            "batch_size": self.config.batch_size,
            "polling_interval": self.config.polling_interval,
        }

    def run_once(self) -> float:
        moved = ScheduledExecution.objects.using(self.using).dispatch_next_batch(
            self.config.batch_size
        )
        # Jobs waiting for a rate limit whose window has opened.
        RateLimit.objects.using(self.using).release_due()
        # Jobs whose parents have all succeeded, or one failed.
        JobDependency.objects.using(self.using).release_all_in_batches(self.config.batch_size)
        # Batches whose jobs have all run: their callbacks.
        Batch.objects.using(self.using).complete_all_in_batches()
        self.concurrency_maintenance.run_if_due()
        # A full batch means more are due: go again at once.
        return 0 if moved == self.config.batch_size else self.config.polling_interval


class ConcurrencyMaintenance:
    """Expires semaphores, then releases blocked jobs whose key has room:
    what a crashed or stuck holder left behind, every ``interval`` seconds."""

    def __init__(self, using: str, interval: float) -> None:
        self.using = using
        self.interval = interval
        self._ran_at = float("-inf")

    def run_if_due(self) -> int | None:
        """``run()`` if ``interval`` has passed since the last run."""
        now = time.monotonic()
        if now - self._ran_at < self.interval:
            return None
        self._ran_at = now
        return self.run()

    def run(self) -> int:
        """One pass; returns how many jobs were released."""
        Semaphore.objects.using(self.using).expire_all_in_batches()
        return int(BlockedExecution.objects.using(self.using).release_all_with_room())
