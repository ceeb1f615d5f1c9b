"""A fixed pool of worker threads with idle accounting.

Threads are daemons and long-lived, so each keeps its database connection
open across jobs whatever ``CONN_MAX_AGE`` says; a connection is replaced
only once it is broken.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

from django.db import connections

from ..models import ClaimedExecution

logger = logging.getLogger(__name__)


class Pool:
    def __init__(self, size: int, *, using: str, on_idle: Callable[[], None]) -> None:
        self.size = size
        self.using = using
        self.on_idle = on_idle
        self._jobs: queue.SimpleQueue[ClaimedExecution | None] = queue.SimpleQueue()
        self._busy = 0
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._run, name=f"rq-pool-{i}", daemon=True)
            for i in range(size)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def idle(self) -> int:
        with self._lock:
            return self.size - self._busy

    def post(self, claimed: ClaimedExecution) -> None:
        with self._lock:
            self._busy += 1
        self._jobs.put(claimed)

    def drain(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for running jobs; True if all finished."""
        deadline = time.monotonic() + timeout
        while self.idle < self.size:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def close(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)

    def _run(self) -> None:
        while (claimed := self._jobs.get()) is not None:
            try:
                claimed.perform()
            except Exception:
                # perform() records task errors itself; this is a failure
                # to finalize even after retries. The claim stays for the
                # supervisor's pruning to fail or release.
                logger.exception("Job %s could not be finalized", claimed.job_id)
            finally:
                self._keep_connection_healthy()
                with self._lock:
                    self._busy -= 1
                self.on_idle()
        connections.close_all()

    def _keep_connection_healthy(self) -> None:
        connection = connections[self.using]
        if connection.in_atomic_block:
            # A task left a transaction open; never let it leak into the
            # next job.
            logger.error("A task left a transaction open; closing its connection")
            connection.close()
        elif connection.errors_occurred:
            # Only after a database error: is_usable() costs a round trip.
            if connection.connection is not None and connection.is_usable():
                connection.errors_occurred = False
            else:
                connection.close()
