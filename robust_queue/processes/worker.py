"""The worker: claims ready jobs for its idle threads and runs them."""

from __future__ import annotations

import logging
from typing import Any

from ..config import WorkerConfig
from ..models import ClaimedExecution, ReadyExecution
from .base import Runnable
from .listener import Listener
from .pool import Pool
from .selector import QueueSelector

logger = logging.getLogger(__name__)


class Worker(Runnable):
    kind = "worker"

    def __init__(self, config: WorkerConfig, *, shutdown_timeout: float, **kwargs: Any) -> None:
        self.config = config
        self.shutdown_timeout = shutdown_timeout
        super().__init__(**kwargs)
        self.selector = QueueSelector(config.queues, using=self.using)
        self.pool: Pool | None = None
        self.listener: Listener | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        return {
            "queues": list(self.config.queues),
            "threads": self.config.threads,
            "polling_interval": self.config.polling_interval,
        }

    def boot(self) -> None:
        self.pool = Pool(self.config.threads, using=self.using, on_idle=self.wakeup.wake)
        if Listener.is_supported(self.using):
            self.listener = Listener(self.using, self.wakeup.wake)
            self.listener.start()

    def run_once(self) -> float:
        assert self.pool is not None and self.process is not None
        idle = self.pool.idle
        if idle == 0:
            # A thread that frees up wakes us.
            return self.config.polling_interval
        claimed = self._claim(idle)
        for row in claimed:
            self.pool.post(row)
        return 0 if len(claimed) == idle else self.config.polling_interval

    def shutdown(self) -> None:
        assert self.process is not None
        if self.listener is not None:
            self.listener.stop()
        if self.pool is not None:
            timeout = 0 if self.immediately else self.shutdown_timeout
            if not self.pool.drain(timeout):
                logger.warning("%s: jobs still running after %ss", self.name, timeout)
            self.pool.close()
        mine = ClaimedExecution.objects.using(self.using).filter(process_id=self.process.pk)
        released = mine.release_all()
        if released:
            logger.info("%s released %d unfinished job(s) back to ready", self.name, released)

    def _claim(self, limit: int) -> list[ClaimedExecution]:
        assert self.process is not None
        claimed: list[ClaimedExecution] = []
        for queue_name, excluded in self.selector.plan():
            claimed += ReadyExecution.objects.using(self.using).claim(
                limit - len(claimed),
                process_id=self.process.pk,
                worker_id=self.name,
                queue_name=queue_name,
                exclude_queues=excluded,
            )
            if len(claimed) >= limit or self.stopping:
                break
        return claimed
