"""The dispatcher: moves due scheduled jobs to ready; runs concurrency upkeep."""

from __future__ import annotations

import time
from typing import Any

from .. import concurrency
from ..config import DispatcherConfig
from ..models import ScheduledExecution
from .base import Runnable


class Dispatcher(Runnable):
    kind = "dispatcher"

    def __init__(self, config: DispatcherConfig, **kwargs: Any) -> None:
        self.config = config
        super().__init__(**kwargs)
        self._maintained_at = float("-inf")

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
        self._maintain()
        # A full batch means more are due: go again at once.
        return 0 if moved == self.config.batch_size else self.config.polling_interval

    def _maintain(self) -> None:
        now = time.monotonic()
        if now - self._maintained_at >= self.config.concurrency_maintenance_interval:
            self._maintained_at = now
            concurrency.run_maintenance(self.using)
