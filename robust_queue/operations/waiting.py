"""Waiting for a job's end: ``wait_result`` and ``await_result``.

The waiter never polls the job row at a fixed pace: it reads whether the
job ended (one read by its unique result id), then waits on the
database's change signal (``models/sql/finish_probe.py``): PostgreSQL's
NOTIFY of the job's finish, SQLite's data version; on MySQL/MariaDB, which
have neither, the wait is the back-off itself. Between reads the back-off
doubles from ``FIRST_LOOK`` to ``LAST_LOOK`` seconds: an end that sends no
signal (a cancel, a prune, a failure recorded by another process) is
still seen within ``LAST_LOOK``.

The probe has a connection of its own, closed on return, so a waiter's
transaction never hides the end from it. The returned ``TaskResult`` is
the caller's, refreshed on the caller's connection.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

from django.db import connections

from .. import conf
from ..compat import TaskResult
from ..models.sql import dialect_for

__all__ = ["await_result", "wait_result"]

FIRST_LOOK = 0.05
LAST_LOOK = 1.0


def wait_result(result: TaskResult[Any], *, timeout: float) -> TaskResult[Any]:
    """Block until the job of ``result`` has finished or failed, at most
    ``timeout`` seconds; return ``result``, refreshed.

    Raises ``TimeoutError`` if it has not ended by then, and
    ``TaskResultDoesNotExist`` if its job is not stored (cleared, or never
    written).
    """
    _check(result, timeout)
    if not result.is_finished:
        _until_ended(result, time.monotonic() + timeout, timeout)
    result.refresh()
    return result


async def await_result(result: TaskResult[Any], *, timeout: float) -> TaskResult[Any]:
    """``wait_result`` for async code: the wait runs in a thread, whose
    database connections are closed when it ends."""
    _check(result, timeout)
    return await asyncio.to_thread(_wait_and_close, result, timeout)


def _wait_and_close(result: TaskResult[Any], timeout: float) -> TaskResult[Any]:
    try:
        return wait_result(result, timeout=timeout)
    finally:
        # A pool thread: what it opened for this wait is not left behind.
        connections.close_all()


def _until_ended(result: TaskResult[Any], deadline: float, timeout: float) -> None:
    probe = dialect_for(conf.database_for(result.backend)).finish_probe(result.id)
    try:
        delay = FIRST_LOOK
        # None: not stored; result.refresh() raises TaskResultDoesNotExist.
        while probe.is_finished() is False:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(
                    f"Job {result.id} of task {result.task.module_path} did not "
                    f"finish within {timeout:g} s."
                )
            probe.wait(min(delay, left))
            delay = min(delay * 2, LAST_LOOK)
    finally:
        probe.close()


def _check(result: Any, timeout: Any) -> None:
    if not isinstance(result, TaskResult):
        raise TypeError(f"wait_result() takes a TaskResult, not {type(result).__name__}.")
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout < math.inf
    ):
        raise ValueError(
            f"wait_result(): timeout must be a number of seconds above 0, not {timeout!r}."
        )
