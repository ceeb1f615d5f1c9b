"""A process's row in ``robust_queue_process`` and the heartbeat that keeps it."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import DatabaseError, connections
from django.utils.crypto import get_random_string

from ..models import Process
from ..models.sql import dialect_for, query_log
from .outage import OutageReport

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
        self.process = Process.objects.using(self.using).register(
            kind=self.kind,
            name=self.name,
            pid=os.getpid(),
            hostname=socket.gethostname(),
            supervisor_id=self.supervisor_id,
            metadata=self.metadata,
        )
        return self.process

    def stop(self) -> None:
        if self.process is None:
            return
        try:
            self.process.deregister()
        except DatabaseError as exc:
            # The database is down or locked as the process ends: its row
            # stays, and its claims are failed when a supervisor prunes it.
            logger.warning(
                "%s could not remove its process row (%s); it is pruned once its "
                "heartbeat is older than process_alive_threshold",
                self.name,
                " ".join(str(exc).split()) or type(exc).__name__,
            )


class Heartbeat:
    """Keeps a process's row fresh and knows whether the database answers.

    Children beat from their own thread (``start()``); the supervisor calls
    ``beat_if_due()`` from its loop, so that it stays thread-free and forks
    safely. A failed beat logs one warning per outage and is retried every
    ``RETRY`` seconds until the database is back. When the row is gone (the
    process was pruned), ``on_lost`` is called once. Other threads report
    their database errors through ``failed()`` too (``OutageReport``).

    With ``on_command``, each beat also reads the command an operator left
    on the row (quiet, stop: ``Process.ask``) and hands it over until the
    process acknowledges it.
    """

    RETRY = 1.0

    def __init__(
        self,
        process: Process,
        interval: float,
        on_lost: Callable[[], None],
        on_command: Callable[[str], None] | None = None,
    ) -> None:
        self.process = process
        self.interval = interval
        self.on_lost = on_lost
        self.on_command = on_command
        # Shared by every thread of the process that uses the database.
        self.report = OutageReport(process.name)
        self._next_at = time.monotonic() + interval
        # Since when every beat was refused because another session holds
        # the database's one write lock (SQLite), or None.
        self._locked_since: float | None = None
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

    @property
    def outages(self) -> int:
        """Outages seen so far: other threads' connections died in each."""
        return self.report.outages

    def healthy_for(self) -> float:
        """Seconds since beats succeed again without a failure (0 if down)."""
        return self.report.healthy_for()

    def locked_for(self) -> float:
        """Seconds for which every beat was refused as locked (SQLite: a
        session holds the database's write lock), 0 if the last one was not."""
        since = self._locked_since
        return 0.0 if since is None else time.monotonic() - since

    def failed(self, error: BaseException, doing: str = "Heartbeat") -> None:
        """Count a database error of any thread; warn once per outage."""
        # Beat soon: the outage may be over before the interval is.
        self._next_at = min(self._next_at, time.monotonic() + self.RETRY)
        self.report.failed(error, doing)

    def beat_if_due(self) -> None:
        """Beat when the interval has passed (sooner while failing)."""
        if time.monotonic() >= self._next_at and self._beat_safely() is False:
            self._lost()

    def beat(self) -> bool:
        """Record one heartbeat; False if the row is gone. Then read the
        command asked of the process, if it takes any."""
        alive = self.process.heartbeat()
        if alive and self.on_command is not None:
            command = self.process.pending_command()
            if command is not None:
                self.on_command(command)
        return alive

    def _beat_safely(self) -> bool | None:
        """Beat; None if the database did not answer."""
        try:
            alive = self.beat()
        except DatabaseError as exc:
            if dialect_for(self.process._state.db or "default").refused_as_locked(exc):
                self._locked_since = self._locked_since or time.monotonic()
            else:
                self._locked_since = None
            self.failed(exc)
            connections.close_all()
            self._next_at = time.monotonic() + min(self.interval, self.RETRY)
            return None
        self.report.recovered()
        self._locked_since = None
        self._next_at = time.monotonic() + self.interval
        return alive

    def _until_due(self) -> float:
        # Capped: a failure seen by the process's loop brings the beat
        # forward (``failed``).
        return min(max(self._next_at - time.monotonic(), 0.0), self.RETRY)

    def _lost(self) -> None:
        logger.warning("%s is no longer registered (pruned)", self.process.name)
        self.on_lost()

    def _run(self) -> None:
        try:
            while not self._stop.wait(self._until_due()):
                query_log.forget()
                if time.monotonic() >= self._next_at and self._beat_safely() is False:
                    self._lost()
                    return
        finally:
            connections.close_all()
