"""Time limits: per task (``@time_limit`` or ``@task(time_limit=...)``) and
backend-wide (``ROBUST_QUEUE["time_limit"]``).

A job past its limit is interrupted in its worker thread (an asynchronous
``TaskTimeoutError``; an ``async def`` task is cancelled in its event
loop); a body that does not respond within ``interrupt_grace_period`` has
its worker process exit once its other jobs have finished, and the
supervisor replaces it (see ``processes/watchdog.py``). The failure goes
through the task's retry policy like any other.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from .. import conf, conversions
from ..compat import Task
from .option import Call, Option


def _time_limit(limit: float | timedelta) -> float:
    """Stop the task's job when it runs longer than ``limit`` (seconds or a
    ``timedelta``); stacked over ``@task``."""
    try:
        return conversions.time_limit(limit)
    except ValueError as exc:
        raise ValueError(f"{exc}, not {limit!r}.") from None


def _keyword(value: object) -> object:
    # time_limit=30 is @time_limit(30).
    return None if value is None else Call((value,))


TIME_LIMIT = Option(name="time_limit", kind=float, make=_time_limit, keyword=_keyword)
time_limit = TIME_LIMIT.decorator()


def limit_for(task: Task[..., Any] | None) -> float | None:
    """The task's own limit, else the backend-wide default; None: none."""
    own = TIME_LIMIT.of(task)
    if own is not None:
        return own
    return conf.get(conf.TIME_LIMIT)
