"""The supervisor: runs every configured role, replaces the ones that die,
prunes dead processes, and shuts everything down on TERM/INT (graceful) or
QUIT (immediate).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from django.db import DatabaseError

from ..models import Process, RecurringTask, retention
from ..models.sql import dialect_for
from ..options import recurrence
from . import maintenance
from .banner import banner
from .base import Runnable
from .children import Child, ForkedChild, Role, ThreadChild
from .config import SupervisorConfig
from .dispatcher import Dispatcher
from .housekeeping import Housekeeping
from .lock_wait import bounded_lock_wait
from .pidfile import Pidfile
from .registration import Heartbeat
from .scheduler import SchedulerProcess
from .signal_handling import IMMEDIATE, SignalQueue
from .unresponsive import StuckChildren, supervision_metadata
from .worker import Worker

logger = logging.getLogger(__name__)

KILLED = "did not stop within the shutdown timeout and was killed"
# Extra time past shutdown_timeout before stragglers are killed.
KILL_GRACE = 5.0
# How often the supervisor reaps, replaces and maintains.
TICK = 0.5
# The pause between two slices of an unfinished retention pass.
BUSY_TICK = 0.05
# How often shutdown says what it waits for.
PROGRESS_EVERY = 1.0
# The longest the supervisor waits for a row lock (lock_wait.py).
LOCK_WAIT = 1
CHILD_KINDS: dict[str, Callable[..., Child]] = {
    "fork": ForkedChild.start,
    "thread": ThreadChild.start,
}


class Supervisor(Runnable):
    kind = "supervisor"
    heartbeat_in_thread = False

    def __init__(self, config: SupervisorConfig) -> None:
        self.config = config
        super().__init__(using=config.database, heartbeat_interval=config.heartbeat_interval)
        self.signals = SignalQueue(self.wakeup.wake)
        self.children: list[Child] = []
        self.pending: list[tuple[float, Role, int]] = []
        self.backlog = maintenance.Backlog(
            self._database_failed, self._exit_waits_for_lock, using=config.database
        )
        # A pruned worker stops within a beat and the shutdown timeout.
        settle = config.heartbeat_interval + config.shutdown_timeout + KILL_GRACE
        self.orphans = maintenance.OrphanSweep(config.database, settle)
        self.stuck = StuckChildren(config.database, settle, config.alive_threshold)
        self._pruned_at = time.monotonic()
        # Whether a write lock held by no child of ours was reported.
        self._lock_reported = False
        self.housekeeping = Housekeeping(
            partial(retention.clear_expired_in_steps, config.database),
            interval=config.maintenance_interval,
            budget=config.maintenance_budget,
        )

    @property
    def metadata(self) -> dict[str, Any]:
        workers = sum(worker.processes for worker in self.config.workers)
        dispatchers = len(self.config.dispatchers)
        interval = self.config.heartbeat_interval
        return {"mode": self.config.mode, **supervision_metadata(workers, dispatchers, interval)}

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
        self.orphans.fail_all()
        roles = self._roles()
        scheduler = any(role.kind == "scheduler" for role in roles)
        for line in banner(self.config, scheduler=scheduler):
            logger.info("%s", line)
        for role in roles:
            self._launch(role, failures=0)

    def run_once(self) -> float:
        # Runnable retries this after a database error: the children keep
        # running (they retry too) and maintenance resumes on the next tick.
        self._tick()
        # An unfinished retention pass goes on after a breath, as the
        # dispatcher loops while its batches are full.
        return BUSY_TICK if self.housekeeping.running else TICK

    def shutdown(self) -> None:
        self.housekeeping.stop()
        self._stop_children()

    def lost_registration(self) -> None:
        """Our row was pruned: register again and adopt our children."""
        self.process = self.registration.start()
        self.heartbeat = Heartbeat(
            self.process, self.config.heartbeat_interval, self.lost_registration
        )
        adopted = self.process.adopt(
            pids=[c.pid for c in self.children if c.pid is not None],
            pks=[pk for c in self.children if (pk := c.process_pk()) is not None],
        )
        logger.warning("%s registered again; adopted %d child(ren)", self.name, adopted)

    def _roles(self) -> list[Role]:
        roles = []
        for worker in self.config.workers:
            build = partial(Worker, worker, shutdown_timeout=self.config.shutdown_timeout)
            roles += [Role("worker", build)] * worker.processes
        roles += [Role("dispatcher", partial(Dispatcher, d)) for d in self.config.dispatchers]
        scheduler = self.config.scheduler
        if scheduler is not None and (scheduler.always_start or self._has_recurring_tasks()):
            roles.append(Role("scheduler", partial(SchedulerProcess, scheduler)))
        return roles

    def _has_recurring_tasks(self) -> bool:
        return bool(recurrence.definitions()) or (RecurringTask.objects.using(self.using).exists())

    def _launch(self, role: Role, failures: int) -> None:
        start = CHILD_KINDS[self.config.mode]
        self.children.append(
            start(
                role,
                failures,
                using=self.using,
                heartbeat_interval=self.config.heartbeat_interval,
                supervisor_id=self._pk(),
            )
        )

    def stop_requested(self) -> bool:
        """Signals are queued (``SignalQueue``): act on those received."""
        for signum in self.signals.pop_all():
            self._request_stop(immediately=signum in IMMEDIATE or self.stopping)
        return self.stopping

    def _tick(self) -> None:
        # Reaping and replacing first: neither needs the database.
        self.stop_requested()
        self._reap()
        now = time.monotonic()
        for due in [entry for entry in self.pending if entry[0] <= now]:
            self.pending.remove(due)
            if not self.stopping:
                self._launch(due[1], due[2])
        self.backlog.flush()
        assert self.heartbeat is not None
        self.heartbeat.beat_if_due()
        if self.stopping:
            # About to stop children: no maintenance that could wait.
            return
        if now - self._pruned_at >= self.config.heartbeat_interval:
            self._pruned_at = now
            self._prune()
        if self.heartbeat.locked_for() >= self.config.alive_threshold:
            self._end_write_lock_holder()
        else:
            self._lock_reported = False
        # A slice of the retention pass: a long one resumes next tick, and
        # a signal received meanwhile ends the slice after its batch.
        self.housekeeping.run(interrupted=lambda: bool(self.signals.pending))

    def _reap(self) -> None:
        for child in list(self.children):
            reason = child.exit_reason()
            if reason is None:
                continue
            self.children.remove(child)
            if child.unresponsive is not None:
                self._replace_unresponsive(child, reason)
                continue
            if not self.stopping:
                delay, failures = child.replacement_delay()
                if child.clean_exit:
                    logger.info("%s %s; starting a fresh one now", child, reason)
                else:
                    logger.error("%s %s; replacing it in %.0fs", child, reason, delay)
                self.pending.append((time.monotonic() + delay, child.role, failures))
            self.backlog.add(partial(self._fail_claims, child, reason), _recording(child))

    def _replace_unresponsive(self, child: Child, reason: str) -> None:
        then = "" if self.stopping else "; starting a fresh one now"
        logger.warning("%s %s (unresponsive: %s)%s", child, reason, child.unresponsive, then)
        # Pruned, or its row gone: its claims were failed with the row (or
        # are the orphan sweep's), and this record finds nothing. Ended
        # with its row in place (it held SQLite's write lock): they are
        # failed here, as for any exit.
        self.backlog.add(partial(self._fail_claims, child, reason), _recording(child))
        if not self.stopping:
            self.pending.append((time.monotonic(), child.role, child.failures))

    def _end_write_lock_holder(self) -> None:
        """The database has refused our heartbeat as locked for a whole
        alive threshold (SQLite: one session holds its only write lock).
        A child of ours holding it is stuck inside a write, and no process
        can heartbeat or be pruned until it ends: end it (its lock goes
        with it). Anyone else holding it is reported once."""
        holder = dialect_for(self.using).write_lock_holder()
        for child in self.children:
            if holder is not None and child.pid == holder and child.unresponsive is None:
                locked = self.heartbeat.locked_for() if self.heartbeat else 0.0
                child.end_unresponsive(
                    f"it has held the database's write lock for {locked:.0f}s, "
                    "and no process could heartbeat meanwhile"
                )
                return
        if not self._lock_reported:
            self._lock_reported = True
            if holder is None:
                who = "its holder cannot be named"
            elif holder == os.getpid():
                who = (
                    "this process holds it: a thread stuck inside a write cannot be "
                    "killed; restart the supervisor"
                )
            else:
                who = f"pid {holder} holds it, not a process of this supervisor"
            logger.warning(
                "%s: the database has refused writes as locked for over %gs (%s); waiting",
                self.name,
                self.config.alive_threshold,
                who,
            )

    def _fail_claims(self, child: Child, reason: str) -> None:
        reused = any(other.pid == child.pid for other in self.children)
        assert self.process is not None
        # A claim another session holds (a late finalize, an operator)
        # must not stall reaping: the record stays and is tried again.
        with bounded_lock_wait(self.using, LOCK_WAIT):
            child.fail_claims(self.process, reason, pid_reused=reused)

    def _prune(self) -> None:
        # After an outage every heartbeat is stale. Prune only once we have
        # reached the database for a whole alive threshold: by then every
        # live process has beaten again.
        assert self.heartbeat is not None
        pruned: list[Process] = []
        try:
            with bounded_lock_wait(self.using, LOCK_WAIT):
                if self.heartbeat.healthy_for() >= self.config.alive_threshold:
                    pruned = maintenance.prune_processes(
                        self.using, self.config.alive_threshold, self._pk(), self.orphans.faults
                    )
                self.orphans.run()
        except DatabaseError as exc:
            if dialect_for(self.using).lock_conflict(exc) is None:
                raise
            # What is left is failed by a later round (an orphan by then).
            logger.warning("%s: pruning waits for a row lock (%s)", self.name, exc)
        # A child pruned stays stuck (it cannot stop itself): end it, and
        # ``_reap`` replaces it.
        for child, why in self.stuck.find(self.children, pruned):
            child.end_unresponsive(why)

    def _database_failed(self, error: DatabaseError) -> None:
        assert self.heartbeat is not None
        self.heartbeat.failed(error, doing="Recording an exit")

    def _exit_waits_for_lock(self, error: DatabaseError) -> None:
        logger.warning(
            "%s: recording an exit waits for a row lock another session holds (%s); trying again",
            self.name,
            error,
        )

    def _request_stop(self, *, immediately: bool = False) -> None:
        if immediately and not self.immediately:
            logger.warning(
                "%s stopping now: running jobs are given back to the queue and will run again",
                self.name,
            )
        elif not self.stopping:
            logger.info(
                "%s stopping: running jobs get %ss to finish, then go back "
                "to the queue and run again (Ctrl-C again or QUIT: stop now)",
                self.name,
                self.config.shutdown_timeout,
            )
        self.stopping = True
        self.immediately = self.immediately or immediately
        self._signal_children(self.immediately)

    def _signal_children(self, immediately: bool) -> None:
        for child in self.children:
            child.stop(immediately=immediately)

    def _stop_children(self) -> None:
        self._request_stop(immediately=self.immediately)
        deadline = time.monotonic() + self.config.shutdown_timeout + KILL_GRACE
        reported = time.monotonic()
        while self.children and time.monotonic() < deadline:
            # A second INT/TERM or a QUIT during a graceful stop: stop now.
            if self.signals.pop_all():
                self._request_stop(immediately=True)
            self._reap()
            self.backlog.flush()
            if self.children and time.monotonic() - reported >= PROGRESS_EVERY:
                reported = time.monotonic()
                logger.info(
                    "%s waiting for %d process(es) to stop (%s), %.0f s left",
                    self.name,
                    len(self.children),
                    ", ".join(str(child) for child in self.children),
                    max(deadline - reported, 0),
                )
            self.wakeup.wait(0.05)
        if not self.children:
            logger.info("%s: every process stopped", self.name)
        for child in self.children:
            child.kill()
            # A child that did not stop in time may hold a job whose body
            # ran but whose outcome it could not record: fail its claims
            # (the retry policy applies) rather than run them again.
            self.backlog.add(partial(self._fail_claims, child, KILLED), _recording(child))
        self.children.clear()
        if not self.backlog.flush():
            locked = self.backlog.waiting_for_lock
            why = "their rows are locked" if locked else "the database is down"
            logger.error(
                "%s could not record %d exit(s): %s; their jobs are failed "
                "when the processes are pruned",
                self.name,
                len(self.backlog),
                why,
            )

    def _pk(self) -> int:
        assert self.process is not None
        return self.process.pk


def _recording(child: Child) -> str:
    return f"Recording the exit of {child}"
