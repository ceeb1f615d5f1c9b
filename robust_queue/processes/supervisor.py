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

from .. import recurrence, retention
from ..config import SupervisorConfig
from ..models import RecurringTask
from . import maintenance
from .base import Runnable
from .children import Child, Role, describe_exit, fork, start_thread
from .dispatcher import Dispatcher
from .pidfile import Pidfile
from .scheduling import SchedulerProcess
from .signal_handling import IMMEDIATE, SignalQueue
from .worker import Worker

logger = logging.getLogger(__name__)

# Extra time past shutdown_timeout before stragglers are killed.
KILL_GRACE = 5.0
# How often the supervisor reaps, replaces and maintains.
TICK = 0.5


class Supervisor(Runnable):
    kind = "supervisor"

    def __init__(self, config: SupervisorConfig) -> None:
        self.config = config
        super().__init__(using=config.database, heartbeat_interval=config.heartbeat_interval)
        self.signals = SignalQueue(self.wakeup.wake)
        self.children: dict[Any, Child] = {}
        self.pending: list[tuple[float, Role, int]] = []
        self._pruned_at = self._cleared_at = time.monotonic()

    @property
    def metadata(self) -> dict[str, Any]:
        return {"mode": self.config.mode}

    def run(self) -> int:
        """Run until stopped (``Runnable.start``); return the exit code."""
        pidfile = Pidfile(self.config.pidfile) if self.config.pidfile else None
        if pidfile:
            pidfile.acquire()
        try:
            self.signals.install()
            self.start()
            return 0
        finally:
            if pidfile:
                pidfile.release()

    def boot(self) -> None:
        maintenance.fail_orphaned_claims(self.using)
        self._prune()
        for role in self._roles():
            self._launch(role, failures=0)

    def run_once(self) -> float:
        # Runnable retries this after a database error: the children keep
        # running (they retry too) and maintenance resumes on the next tick.
        self._tick()
        return TICK

    def shutdown(self) -> None:
        self._stop_children()

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
        kwargs = {
            "using": self.using,
            "heartbeat_interval": self.config.heartbeat_interval,
            "supervisor_id": self._pk(),
        }
        if self.config.mode == "thread":
            child = start_thread(role, failures, **kwargs)
            self.children[child.thread] = child
        else:
            pid, child = fork(role, failures, parent_pid=os.getpid(), **kwargs)
            self.children[pid] = child

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
            return [(thread, 0) for thread in self.children if not thread.is_alive()]
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

    def _signal_children(self, immediately: bool) -> None:
        for key, child in self.children.items():
            if child.runnable is not None:
                child.runnable.stop(immediately=immediately)
            else:
                try:
                    os.kill(key, signal.SIGQUIT if immediately else signal.SIGTERM)
                except ProcessLookupError:
                    pass

    def _stop_children(self) -> None:
        self._request_stop()
        deadline = time.monotonic() + self.config.shutdown_timeout + KILL_GRACE
        while self.children and time.monotonic() < deadline:
            # A QUIT during a graceful stop makes it immediate.
            if any(signum in IMMEDIATE for signum in self.signals.pop_all()):
                self._signal_children(True)
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
        assert self.process is not None
        return self.process.pk
