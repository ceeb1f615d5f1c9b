"""How the supervisor runs its roles: forked processes or threads."""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn

from django.db import connections

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


@dataclass(slots=True)
class Child:
    role: Role
    started_at: float = field(default_factory=time.monotonic)
    failures: int = 0
    runnable: Runnable | None = None
    thread: threading.Thread | None = None

    def replacement_delay(self) -> tuple[float, int]:
        """Back-off before replacing this child, and the new failure count."""
        if time.monotonic() - self.started_at >= STABLE_AFTER:
            return 0.0, 0
        return min(2.0**self.failures, MAX_BACKOFF), self.failures + 1


def fork(role: Role, failures: int, **build_kwargs: object) -> tuple[int, Child]:
    """Fork a child running ``role``; the child never returns."""
    # A forked child must not share the parent's database sockets.
    connections.close_all()
    pid = os.fork()
    if pid == 0:
        _run_forked(role, build_kwargs)
    logger.info("Forked %s (pid %d)", role.kind, pid)
    return pid, Child(role, failures=failures)


def _run_forked(role: Role, build_kwargs: dict[str, object]) -> NoReturn:
    code = 1
    try:
        restore_defaults()
        _terminate_with_parent()
        runnable = role.build(**build_kwargs)
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


def _terminate_with_parent() -> None:
    """Ask Linux to send SIGTERM when the supervisor dies (kill -9 too).

    Elsewhere the loop's parent-pid check (at most MAX_SLEEP late) covers it.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def start_thread(role: Role, failures: int, **build_kwargs: object) -> Child:
    runnable = role.build(**build_kwargs)
    thread = threading.Thread(target=runnable.start, name=f"rq-{role.kind}", daemon=True)
    thread.start()
    return Child(role, failures=failures, runnable=runnable, thread=thread)


def describe_exit(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"was killed by signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited with code {os.waitstatus_to_exitcode(status)}"
