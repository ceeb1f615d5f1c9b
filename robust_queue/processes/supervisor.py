"""The supervisor: runs every configured role, replaces the ones that die,
prunes dead processes, and shuts everything down on TERM/INT (graceful) or
QUIT (immediate).
"""

from __future__ import annotations

import logging
import os
import signal
import time
from functools import partial
from typing import Any

from django.db import DatabaseError, connections

from .. import hooks, recurrence, retention
from ..config import SupervisorConfig
from ..models import RecurringTask
from . import maintenance
from .children import Child, Role, describe_exit, fork, start_thread
from .dispatcher import Dispatcher
from .pidfile import Pidfile
from .registration import Heartbeat, Registration
from .scheduling import SchedulerProcess
from .signal_handling import GRACEFUL, IMMEDIATE, SignalQueue
from .wakeup import Wakeup
from .worker import Worker

logger = logging.getLogger(__name__)

# Extra time past shutdown_timeout before stragglers are killed.
KILL_GRACE = 5.0


class Supervisor:
    kind = "supervisor"

    def __init__(self, config: SupervisorConfig) -> None:
        self.config = config
        self.using = config.database
        self.wakeup = Wakeup()
        self.signals = SignalQueue(self.wakeup.wake)
        self.registration = Registration(
            self.kind, using=self.using, metadata={"mode": config.mode}
        )
        self.heartbeat: Heartbeat | None = None
        self.children: dict[Any, Child] = {}
        self.pending: list[tuple[float, Role, int]] = []
        self.stopping = False
        self._pruned_at = self._cleared_at = time.monotonic()

    @property
    def name(self) -> str:
        return self.registration.name

    def start(self) -> int:
        """Run until stopped; return the process exit code."""
        pidfile = Pidfile(self.config.pidfile) if self.config.pidfile else None
        if pidfile:
            pidfile.acquire()
        try:
            self.signals.install()
            self._boot()
            for role in self._roles():
                self._launch(role, failures=0)
            while not self.stopping:
                self._tick_safely()
                self.wakeup.wait(0.5)
            return 0
        finally:
            self._shutdown()
            if pidfile:
                pidfile.release()

    def _boot(self) -> None:
        process = self.registration.start()
        self.heartbeat = Heartbeat(process, self.config.heartbeat_interval, self._lost)
        self.heartbeat.start()
        maintenance.fail_orphaned_claims(self.using)
        self._prune()
        logger.info("%s started (pid %s, %s mode)", self.name, os.getpid(), self.config.mode)
        hooks.run(self.kind, "on_start", self)

    def _roles(self) -> list[Role]:
        roles = []
        for worker in self.config.workers:
            build = partial(Worker, worker, shutdown_timeout=self.config.shutdown_timeout)
            roles += [Role("worker", build)] * worker.processes
        roles += [Role("dispatcher", partial(Dispatcher, d)) for d in self.config.dispatchers]
        if self.config.scheduler is not None and self._has_recurring_tasks():
            roles.append(Role("scheduler", partial(SchedulerProcess, self.config.scheduler)))
        return roles

    def _has_recurring_tasks(self) -> bool:
        return bool(recurrence.definitions()) or (
            RecurringTask.objects.using(self.using).exists()
        )

    def _launch(self, role: Role, failures: int) -> None:
        assert self.registration.process is not None
        kwargs = {
            "using": self.using,
            "heartbeat_interval": self.config.heartbeat_interval,
            "supervisor_id": self.registration.process.pk,
        }
        if self.config.mode == "thread":
            child = start_thread(role, failures, **kwargs)
            self.children[child.thread] = child
        else:
            pid, child = fork(role, failures, parent_pid=os.getpid(), **kwargs)
            self.children[pid] = child

    def _tick_safely(self) -> None:
        try:
            self._tick()
        except DatabaseError:
            # The database is down or failing over: keep the children (they
            # retry too) and try the maintenance again on the next tick.
            logger.exception("%s: database error in maintenance", self.name)
            connections.close_all()

    def _tick(self) -> None:
        for signum in self.signals.pop_all():
            self._request_stop(immediately=signum in IMMEDIATE)
        self._reap()
        now = time.monotonic()
        for due in [entry for entry in self.pending if entry[0] <= now]:
            self.pending.remove(due)
            if not self.stopping:
                self._launch(due[1], due[2])
        if now - self._pruned_at >= self.config.heartbeat_interval:
            self._prune()
        if now - self._cleared_at >= self.config.maintenance_interval:
            self._cleared_at = now
            retention.clear_expired(self.using)

    def _reap(self) -> None:
        for key, status in self._exited():
            child = self.children.pop(key)
            reason = describe_exit(status) if isinstance(key, int) else "stopped"
            process = child.runnable.process if child.runnable else None
            if isinstance(key, int):
                maintenance.fail_exited(self.using, self._pk(), key, reason)
            elif process is not None:
                maintenance.fail_process(self.using, process.pk, reason)
            if self.stopping:
                continue
            logger.error("%s %s %s; replacing it", child.role.kind, key, reason)
            delay, failures = child.replacement_delay()
            self.pending.append((time.monotonic() + delay, child.role, failures))

    def _exited(self) -> list[tuple[Any, int]]:
        if self.config.mode == "thread":
            return [(t, 0) for t, c in self.children.items() if not t.is_alive()]
        exited = []
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid in self.children:
                exited.append((pid, status))
        return exited

    def _prune(self) -> None:
        self._pruned_at = time.monotonic()
        maintenance.prune_dead_processes(
            self.using, self.config.alive_threshold, keep=self._pk()
        )

    def _request_stop(self, *, immediately: bool = False) -> None:
        if not self.stopping or immediately:
            logger.info("%s stopping (%s)", self.name, "now" if immediately else "gracefully")
        self.stopping = True
        self._signal_children(immediately)

    def _lost(self) -> None:
        logger.warning("%s was pruned; stopping", self.name)
        self.stopping = True
        self.wakeup.wake()

    def _signal_children(self, immediately: bool) -> None:
        for key, child in self.children.items():
            if child.runnable is not None:
                child.runnable.stop(immediately=immediately)
            else:
                try:
                    os.kill(key, signal.SIGQUIT if immediately else signal.SIGTERM)
                except ProcessLookupError:
                    pass

    def _shutdown(self) -> None:
        hooks.run(self.kind, "on_stop", self)
        try:
            if self.registration.process is not None:
                self._stop_children()
        finally:
            if self.heartbeat is not None:
                self.heartbeat.stop()
            self.registration.stop()
            logger.info("%s stopped", self.name)
            hooks.run(self.kind, "on_exit", self)

    def _stop_children(self) -> None:
        self._request_stop()
        deadline = time.monotonic() + self.config.shutdown_timeout + KILL_GRACE
        while self.children and time.monotonic() < deadline:
            for signum in self.signals.pop_all():
                if signum in IMMEDIATE:
                    self._signal_children(True)
                elif signum not in GRACEFUL:
                    continue
            self._reap()
            self.wakeup.wait(0.05)
        for key in list(self.children):
            self._kill(key)

    def _kill(self, key: Any) -> None:
        child = self.children.pop(key)
        if isinstance(key, int):
            logger.error("%s (pid %d) did not stop in time; killing it", child.role.kind, key)
            try:
                os.kill(key, signal.SIGKILL)
                os.waitpid(key, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            maintenance.release_exited(self.using, self._pk(), key)
        elif child.runnable is not None and child.runnable.process is not None:
            maintenance.release_process(self.using, child.runnable.process.pk)

    def _pk(self) -> int:
        assert self.registration.process is not None
        return self.registration.process.pk
