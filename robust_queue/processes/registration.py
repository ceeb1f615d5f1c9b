"""A process's row in ``robust_queue_process`` and the heartbeat that keeps it."""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable
from typing import Any

from django.db import DatabaseError, connections
from django.utils import timezone
from django.utils.crypto import get_random_string

from ..models import Process

logger = logging.getLogger(__name__)


def process_name(kind: str) -> str:
    """Unique across hosts: kind, hostname, pid and a random tail."""
    host = socket.gethostname()[:60]
    return f"{kind}-{host}-{os.getpid()}-{get_random_string(6).lower()}"


class Registration:
    """Registers a process on ``start()`` and removes the row on ``stop()``."""

    def __init__(
        self,
        kind: str,
        *,
        using: str,
        metadata: dict[str, Any],
        supervisor_id: int | None = None,
    ) -> None:
        self.kind = kind
        self.using = using
        self.name = process_name(kind)
        self.metadata = metadata
        self.supervisor_id = supervisor_id
        self.process: Process | None = None

    def start(self) -> Process:
        self.process = Process.objects.using(self.using).create(
            kind=self.kind,
            name=self.name,
            pid=os.getpid(),
            hostname=socket.gethostname(),
            supervisor_id=self.supervisor_id,
            metadata=self.metadata,
        )
        return self.process

    def stop(self) -> None:
        if self.process is not None:
            Process.objects.using(self.using).filter(pk=self.process.pk).delete()


class Heartbeat:
    """Touches the row every ``interval`` seconds from its own thread.

    When the row is gone (the process was pruned), ``on_lost`` is called
    once: the process stops itself.
    """

    def __init__(
        self, process: Process, interval: float, on_lost: Callable[[], None]
    ) -> None:
        self.process = process
        self.interval = interval
        self.on_lost = on_lost
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"heartbeat-{process.name}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def beat(self) -> bool:
        """Record one heartbeat; False if the row is gone."""
        rows = Process.objects.using(self.process._state.db or "default")
        return bool(rows.filter(pk=self.process.pk).update(last_heartbeat_at=timezone.now()))

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    alive = self.beat()
                except DatabaseError:
                    logger.exception("Heartbeat of %s failed", self.process.name)
                    connections.close_all()
                    continue
                if not alive:
                    logger.warning("%s was pruned; stopping", self.process.name)
                    self.on_lost()
                    return
        finally:
            connections.close_all()
