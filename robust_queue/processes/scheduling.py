"""The scheduler role: runs ``Scheduler`` (scheduler.py) as a process."""

from __future__ import annotations

from typing import Any

from ..config import SchedulerConfig
from .base import Runnable
from .scheduler import Scheduler


class SchedulerProcess(Runnable):
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
