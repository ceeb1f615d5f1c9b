"""What every queue process shares: register, loop, shut down.

``start()`` runs the boot steps, then ``run_once()`` until stopped, then the
shutdown steps in ``finally`` — the order is listed here, not spread over
base classes.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from django.db import DatabaseError, InterfaceError, OperationalError, connections

from .. import signals
from ..backoff import exponential
from ..models import Process
from ..models.sql import query_log
from . import hooks
from .registration import Heartbeat, Registration
from .wakeup import Wakeup

logger = logging.getLogger(__name__)

# The longest a loop sleeps before looking at its parent. Forked children
# also ask Linux for SIGTERM when the parent dies (children.py).
MAX_SLEEP = 5.0
ERROR_PAUSE = 1.0


class Runnable:
    """One process role: worker, dispatcher or scheduler."""

    kind = "process"
    # The supervisor beats from its own loop: it must stay thread-free to
    # fork safely.
    heartbeat_in_thread = True
    # Whether its heartbeat reads the commands operators leave on its row
    # (``obey``): workers only.
    takes_commands = False

    def __init__(
        self,
        *,
        using: str,
        heartbeat_interval: float,
        supervisor_id: int | None = None,
        parent_pid: int | None = None,
    ) -> None:
        self.using = using
        self.heartbeat_interval = heartbeat_interval
        self.parent_pid = parent_pid
        self.wakeup = Wakeup()
        self.stopping = False
        self.immediately = False
        # Why this process ended itself to be replaced (worker recycling);
        # None otherwise.
        self.recycled: str | None = None
        # Set by a shutdown that leaves claims for the supervisor to fail:
        # the row stays, so that the supervisor's reap finds them.
        self.leaves_claims = False
        self.registration = Registration(
            self.kind, using=using, metadata=self.metadata, supervisor_id=supervisor_id
        )
        self.heartbeat: Heartbeat | None = None
        self.process: Process | None = None
        # Told the registered row first thing (a forked child tells its
        # supervisor, children.py).
        self.on_registered: Callable[[Process], None] | None = None
        self._outages_seen = 0
        # The error of the last rounds that failed, and how many in a row.
        self._last_failure: tuple[type[Exception], str] | None = None
        self._failed_rounds = 0

    @property
    def name(self) -> str:
        return self.registration.name

    @property
    def metadata(self) -> dict[str, Any]:
        return {}

    def start(self) -> None:
        """Boot, run until stopped, then shut down (always)."""
        try:
            self._boot()
            while not self.stopping:
                if self._orphaned():
                    logger.warning("%s lost its supervisor; stopping", self.name)
                    break
                query_log.forget()
                pause = self._run_once_safely()
                if not self.stopping and pause > 0:
                    self.wakeup.wait(min(pause, MAX_SLEEP))
        finally:
            self._shutdown()

    def _run_once_safely(self) -> float:
        assert self.heartbeat is not None
        if self.heartbeat.outages != self._outages_seen:
            # The database went away since the last round: this thread's
            # connection died with it; replace it before using it.
            self._outages_seen = self.heartbeat.outages
            connections.close_all()
        try:
            pause = self.run_once()
        except DatabaseError as exc:
            # A dropped connection or a failover: replace this thread's
            # connection and try again after a pause, instead of dying.
            # One warning per outage, not a traceback per round.
            self.heartbeat.failed(exc, doing="Work")
            self._outages_seen = self.heartbeat.outages
            connections.close_all()
            return ERROR_PAUSE
        except Exception as exc:
            # A bug or a row the code cannot read: the process stays up (a
            # supervisor that exits strands its children's replacements).
            if self._is_new_failure(exc):
                logger.exception(
                    "%s: a round failed; going on (logged once while it repeats)", self.name
                )
            return exponential(ERROR_PAUSE, self._failed_rounds, ERROR_PAUSE * 2.0**8)
        self._failed_rounds, self._last_failure = 0, None
        return pause

    def _is_new_failure(self, exc: Exception) -> bool:
        """Count a failed round; True unless it repeats the last one's
        error (its traceback is logged once; the pause doubles)."""
        failure = (type(exc), str(exc))
        repeated = failure == self._last_failure
        self._failed_rounds = self._failed_rounds + 1 if repeated else 1
        self._last_failure = failure
        return not repeated

    def stop(self, *, immediately: bool = False) -> None:
        """Ask the loop to end; safe from a signal handler."""
        self.immediately = self.immediately or immediately
        self.stopping = True
        self.wakeup.wake()

    def boot(self) -> None:
        """Role-specific start-up, after registration."""

    def run_once(self) -> float:
        """Do one round of work; return how long to sleep."""
        raise NotImplementedError

    def shutdown(self) -> None:
        """Role-specific clean-up, before deregistration."""

    def stuck_threads(self) -> list[str]:
        """Threads this role gave up on that still run (a body blocked in
        C past its interrupt): only the end of the process ends them."""
        return []

    def _boot(self) -> None:
        process = self._register()
        if process is None:
            return  # told to stop before it could register: nothing ran
        self.process = process
        if self.on_registered is not None:
            self.on_registered(self.process)
        self.heartbeat = Heartbeat(
            self.process,
            self.heartbeat_interval,
            self.lost_registration,
            on_command=self.obey if self.takes_commands else None,
        )
        if self.heartbeat_in_thread:
            self.heartbeat.start()
        self.boot()
        logger.info("%s started (pid %s)", self.name, os.getpid())
        signals.process_started.send(sender=type(self), process=self.process, runnable=self)
        hooks.run(self.kind, "on_start", self)

    def lost_registration(self) -> None:
        """Our row was pruned: stop (the supervisor starts a new one)."""
        self.stop()

    def obey(self, command: str) -> None:
        """Act on a command an operator left on our row (quiet, stop);
        called from the heartbeat's thread."""

    def _register(self) -> Process | None:
        """Register, waiting for the database if it is down; None if told
        to stop meanwhile (a clean exit: nothing was registered or run).

        Only connection errors wait; an integrity error (our supervisor's
        row is gone) ends the process, and the supervisor starts another.
        """
        warned = False
        while True:
            try:
                return self.registration.start()
            except (OperationalError, InterfaceError) as exc:
                if self.stop_requested():
                    logger.info("%s stops before it could register: %s", self.name, exc)
                    return None
                if not warned:
                    logger.warning("%s waits for the database to register: %s", self.name, exc)
                    warned = True
                connections.close_all()
                self.wakeup.wait(ERROR_PAUSE)

    def stop_requested(self) -> bool:
        """Whether this process was asked to stop (``stop``)."""
        return self.stopping

    def _shutdown(self) -> None:
        hooks.run(self.kind, "on_stop", self)
        try:
            if self.process is not None:
                self.shutdown()
        finally:
            if self.heartbeat is not None:
                self.heartbeat.stop()
            if not self.leaves_claims:
                self.registration.stop()
            logger.info("%s stopped", self.name)
            if self.process is not None:
                signals.process_stopped.send(sender=type(self), process=self.process, runnable=self)
            hooks.run(self.kind, "on_exit", self)
            connections.close_all()

    def _orphaned(self) -> bool:
        return self.parent_pid is not None and os.getppid() != self.parent_pid
