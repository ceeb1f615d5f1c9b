"""PostgreSQL LISTEN: wake an idle worker as soon as a job becomes ready.

Polling stays the correctness path; a lost notification only costs one
polling interval. Other databases have no listener.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.db import connections

from ..models.sql import NOTIFY_CHANNEL

logger = logging.getLogger(__name__)


class Listener:
    def __init__(self, using: str, on_notify: Callable[[], None]) -> None:
        self.using = using
        self.on_notify = on_notify
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rq-listen", daemon=True)

    @staticmethod
    def is_supported(using: str) -> bool:
        return connections[using].vendor == "postgresql"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._listen()
            except Exception:  # noqa: BLE001 - polling covers any failure
                logger.warning("LISTEN connection lost; polling until it is back")
                self._stop.wait(5)

    def _listen(self) -> None:
        import psycopg  # noqa: PLC0415 - only PostgreSQL deployments have it

        params = connections[self.using].get_connection_params()
        with psycopg.connect(**params, autocommit=True) as connection:
            connection.execute(f"LISTEN {NOTIFY_CHANNEL}")
            while not self._stop.is_set():
                for _ in connection.notifies(timeout=1.0, stop_after=1):
                    self.on_notify()
