"""How the supervisor runs its roles: forked processes or threads.

``ForkedChild`` and ``ThreadChild`` share one interface (stop, exit reason,
kill, claims), so the supervisor never asks which one it holds.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import NoReturn

from django.db import connections

from ..backoff import exponential
from ..models import Process
from ..models.process import ProcessQuerySet
from .base import Runnable
from .signal_handling import restore_defaults

logger = logging.getLogger(__name__)

# A child that lived this long before exiting is replaced without delay.
STABLE_AFTER = 60.0
MAX_BACKOFF = 30.0
PR_SET_PDEATHSIG = 1


@dataclass(frozen=True, slots=True)
class Role:
    kind: str
    build: Callable[..., Runnable]


class Child:
    """One running role. ``pid`` is set for a forked child only."""

    pid: int | None = None

    def __init__(self, role: Role, failures: int) -> None:
        self.role = role
        self.failures = failures
        self.started_at = time.monotonic()
        # Set once it ended by itself to be replaced (a recycled worker
        # exits 0); such an exit is no failure.
        self.clean_exit = False
        # Why the supervisor ended it as unresponsive (``end_unresponsive``).
        self.unresponsive: str | None = None

    def replacement_delay(self) -> tuple[float, int]:
        """Back-off before replacing this child, and the new failure count."""
        if self.unresponsive is not None:
            # Stuck, not crashing: the crash-loop back-off does not apply.
            return 0.0, self.failures
        if self.clean_exit or time.monotonic() - self.started_at >= STABLE_AFTER:
            return 0.0, 0
        # 1, 2, 4... seconds: the first try after a crash waits 1 s.
        return exponential(1.0, self.failures + 1, MAX_BACKOFF), self.failures + 1

    def end_unresponsive(self, why: str) -> None:
        """End a child that stopped heartbeating (``why``); it is reaped
        by ``exit_reason`` and replaced at once. Never blocks."""
        raise NotImplementedError

    def stop(self, *, immediately: bool = False) -> None:
        """Ask the child to stop (gracefully unless ``immediately``)."""
        raise NotImplementedError

    def exit_reason(self) -> str | None:
        """Why the child ended, or None while it runs; never blocks."""
        raise NotImplementedError

    def kill(self) -> None:
        """End a child that did not stop in time."""

    def process_pk(self) -> int | None:
        """The child's row, when this process knows it."""
        return None

    def fail_claims(self, supervisor: Process, reason: str, *, pid_reused: bool) -> int:
        """It died: fail its claims with ``reason``; drop its row."""
        return self.rows(supervisor, pid_reused=pid_reused).fail_all_claims(reason)

    def rows(self, supervisor: Process, *, pid_reused: bool = False) -> ProcessQuerySet:
        """The process rows this child registered under ``supervisor``.

        By row, not by supervisor: a row left unsupervised while the
        supervisor re-registers is still this child's.
        """
        rows = Process.objects.using(supervisor._state.db)
        pk = self.process_pk()
        return rows.none() if pk is None else rows.filter(pk=pk)


class ForkedChild(Child):
    pid: int

    def __init__(self, role: Role, failures: int, pid: int, report_fd: int | None = None) -> None:
        super().__init__(role, failures)
        self.pid = pid
        # The child writes the pk of the row it registered here: reaping
        # knows its row without the database, and without comparing this
        # host's clock with the database's (a reused pid).
        self._report_fd = report_fd
        self._pk: int | None = None

    def __str__(self) -> str:
        return f"{self.role.kind} (pid {self.pid})"

    @classmethod
    def start(cls, role: Role, failures: int, **build_kwargs: object) -> ForkedChild:
        """Fork a child running ``role``; the child never returns.

        The caller must be the only thread: a connection held by another
        thread would be inherited, and when the child's copy is dropped
        MySQL's client sends QUIT on the shared socket, ending the parent's
        session (and Python 3.12 warns about forking with threads).
        """
        _warn_about_threads()
        # A forked child must not share the parent's database sockets.
        connections.close_all()
        parent_pid = os.getpid()
        read_fd, write_fd = os.pipe()
        pid = fork_frozen()
        if pid == 0:
            os.close(read_fd)
            _run_forked(role, {**build_kwargs, "parent_pid": parent_pid}, write_fd)
        os.close(write_fd)
        os.set_blocking(read_fd, False)
        logger.info("Forked %s (pid %d)", role.kind, pid)
        return cls(role, failures, pid, read_fd)

    def stop(self, *, immediately: bool = False) -> None:
        try:
            os.kill(self.pid, signal.SIGQUIT if immediately else signal.SIGTERM)
        except ProcessLookupError:
            pass

    def exit_reason(self) -> str | None:
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return self._exited("exited")
        if pid == 0:
            return None
        self.clean_exit = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        return self._exited(describe_exit(status))

    def end_unresponsive(self, why: str) -> None:
        # KILL: a stopped or wedged process handles no TERM. No wait here:
        # a process in uninterruptible sleep dies when its call returns.
        logger.error("%s is unresponsive (%s); killing it (SIGKILL)", self, why)
        self.unresponsive = why
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        logger.error("%s did not stop in time; killing it", self)
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        self._exited("killed")

    def process_pk(self) -> int | None:
        if self._report_fd is not None:
            self._read_report()
        return self._pk

    def rows(self, supervisor: Process, *, pid_reused: bool = False) -> ProcessQuerySet:
        if self.process_pk() is not None or pid_reused:
            return super().rows(supervisor)
        # It ended before it said which row it registered (so it claimed
        # nothing yet): by pid, which no other child of ours has now.
        return supervisor.supervisees_with_pid(self.pid)

    def _read_report(self, *, final: bool = False) -> None:
        assert self._report_fd is not None
        try:
            data = os.read(self._report_fd, 32)
        except BlockingIOError:
            # Not registered yet (or still running, if ``final``).
            if not final:
                return
            data = b""
        os.close(self._report_fd)
        self._report_fd = None
        self._pk = int(data) if data.strip().isdigit() else None

    def _exited(self, reason: str) -> str:
        # Gone: whatever it wrote is in the pipe; read it and close it.
        if self._report_fd is not None:
            self._read_report(final=True)
        return reason


class ThreadChild(Child):
    def __init__(self, role: Role, failures: int, runnable: Runnable) -> None:
        super().__init__(role, failures)
        self.runnable = runnable
        self.thread = threading.Thread(target=runnable.start, name=f"rq-{role.kind}", daemon=True)

    def __str__(self) -> str:
        return f"{self.role.kind} thread {self.runnable.name}"

    @classmethod
    def start(cls, role: Role, failures: int, **build_kwargs: object) -> ThreadChild:
        child = cls(role, failures, role.build(**build_kwargs))
        child.thread.start()
        return child

    def stop(self, *, immediately: bool = False) -> None:
        self.runnable.stop(immediately=immediately)

    def end_unresponsive(self, why: str) -> None:
        logger.error(
            "%s is unresponsive (%s). A thread cannot be killed: it is asked "
            "to stop and left behind, and another starts now. Its row is "
            "gone, so if it resumes it stops itself, and its claims are "
            "failed already; until then it holds what it holds. Restart the "
            "supervisor to end it; fork mode kills a stuck process.",
            self,
            why,
        )
        self.unresponsive = why
        self.runnable.stop(immediately=True)

    def exit_reason(self) -> str | None:
        if self.unresponsive is not None:
            return "was left behind"
        if self.thread.is_alive():
            return None
        stuck = self.runnable.stuck_threads()
        if stuck:
            _report_stuck(self, stuck)
        else:
            # A stuck thread pokes the pipe when its call returns: closed,
            # its number could be reused by a socket the byte would corrupt.
            self.runnable.wakeup.close()
        if self.runnable.recycled is not None:
            self.clean_exit = True
            return f"stopped ({self.runnable.recycled})"
        return "stopped"

    def process_pk(self) -> int | None:
        process = self.runnable.process
        return None if process is None else process.pk


def _report_stuck(child: ThreadChild, stuck: list[str]) -> None:
    logger.error(
        "%s leaves %s behind: a thread blocked outside Python cannot be "
        "stopped in thread mode. It stays in this process until its call "
        "returns, and what it does then is not recorded (the job's failure "
        "already is). Restart the supervisor to end it; use fork mode where "
        "time limits and cancelling matter.",
        child,
        ", ".join(stuck),
    )


def _run_forked(role: Role, build_kwargs: dict[str, object], report_fd: int) -> NoReturn:
    code = 1
    try:
        restore_defaults()
        _terminate_with_parent()
        runnable = role.build(**build_kwargs)
        runnable.on_registered = partial(_report_registration, report_fd)
        signal.signal(signal.SIGTERM, lambda *_: runnable.stop())
        signal.signal(signal.SIGINT, lambda *_: runnable.stop())
        signal.signal(signal.SIGQUIT, lambda *_: runnable.stop(immediately=True))
        runnable.start()
        code = 0
    except BaseException:
        logger.exception("%s (pid %d) crashed", role.kind, os.getpid())
    finally:
        # Never unwind the parent's stack in the child.
        os._exit(code)


def fork_frozen() -> int:
    """``os.fork()``, with every object alive now frozen for the collector.

    A child shares the supervisor's memory until either writes to a page.
    A full collection writes to the header of every object it examines, so
    a child's first one (mid-drain, once enough objects had survived)
    copied nearly every page holding the objects it inherited: each
    worker's private memory stepped from about 13 to 33 MiB (BENCHMARKS.md,
    "Memory of the supervisor tree"). Frozen objects are never examined
    again, in the child or here, so the supervisor's own full collections
    leave the shared pages alone too. A frozen object is still freed when
    its last reference goes; one that ends up in a cycle is never collected.
    Hence the collection first: no garbage is frozen, and each fork (a
    replacement, a recycled worker) freezes only what was made since the
    last one. Nothing is collected between the freeze and the fork
    (CPython's recipe, ``gc.freeze``).
    """
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        gc.freeze()
        return os.fork()
    finally:
        # In both processes: the child collects what it makes itself.
        if enabled:
            gc.enable()


def _report_registration(fd: int, process: Process) -> None:
    """Tell the supervisor which row this child registered, before it
    claims anything."""
    try:
        os.write(fd, f"{process.pk}\n".encode())
    except OSError:
        pass  # The supervisor is gone: nobody reaps this child.
    finally:
        os.close(fd)


def _warn_about_threads() -> None:
    others = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
    if others:
        logger.warning("Forking while other threads run (%s)", ", ".join(others))


def _terminate_with_parent() -> None:
    """Ask Linux to send SIGTERM when the supervisor dies (kill -9 too).

    Elsewhere the loop's parent-pid check (at most MAX_SLEEP late) covers it.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def describe_exit(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"was killed by signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited with code {os.waitstatus_to_exitcode(status)}"
