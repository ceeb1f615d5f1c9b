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

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from .. import conf, conversions
from ..compat import Task
from ..exceptions import ConfigurationError
from .decorators import with_option


def limit_error(value: Any, what: str = "time_limit") -> str | None:
    """Why ``value`` is not a time limit (seconds or a timedelta), or None."""
    try:
        conversions.time_limit(value)
    except ValueError as exc:
        return f"{what} {exc}, not {value!r}."
    return None


def as_seconds(value: Any, what: str = "time_limit") -> float:
    """``value`` in seconds, or ``ConfigurationError`` naming the problem."""
    error = limit_error(value, what)
    if error is not None:
        raise ConfigurationError(error)
    return conversions.time_limit(value)


def time_limit(limit: float | timedelta) -> Callable[[Task[..., Any]], Task[..., Any]]:
    """Stop the task's job when it runs longer than ``limit`` (seconds or a
    ``timedelta``); stacked over ``@task``."""
    seconds = as_seconds(limit, "@time_limit()")

    def decorator(task: Task[..., Any]) -> Task[..., Any]:
        return with_option("time_limit", task, seconds)

    return decorator


def limit_for(task: Task[..., Any] | None) -> float | None:
    """The task's own limit, else the backend-wide default; None: none."""
    own = getattr(task, "time_limit", None)
    if own is not None:
        return float(own)
    return conf.get(conf.TIME_LIMIT)
