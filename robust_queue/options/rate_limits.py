"""Rate limits: at most ``to`` jobs per window of ``per`` start, per key.

``@rate_limit(to=10, per=timedelta(minutes=1), key=...)`` is stacked over
``@task`` (or ``@task(rate_limit={...})``). ``key`` is a string or a
callable over the task's arguments (None: one key for the whole task);
tasks of one ``group`` share their keys. The enqueue path asks
``rate_key()`` for the job's key; the job counts against its key's
current window when it is dispatched — when it would become ready, at
enqueue or when its ``run_after`` comes — and waits (blocked on
``rate:<key>``, in priority order) while the window is full
(``models/rate_limit.py``).

Windows are aligned to the database clock: ``[k * per, (k + 1) * per)``.

A leaf: nothing here imports the models or the task registry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..compat import Task
from .keys import KeyFunction, key_from_call, key_part
from .option import Option

# A rate-limited job waits as a blocked job on this key prefix.
WAITING_PREFIX = "rate:"
KEY_MAX_LENGTH = 255 - len(WAITING_PREFIX)


@dataclass(frozen=True, slots=True, kw_only=True)
class Rate:
    """At most ``to`` jobs of one key start per window of ``per``."""

    to: int
    per: timedelta
    key: str | KeyFunction | None = None
    group: str | None = None

    def validate(self) -> list[str]:
        errors = []
        if isinstance(self.to, bool) or not isinstance(self.to, int) or self.to < 1:
            errors.append(f"'to' must be a whole number >= 1, not {self.to!r}.")
        if not isinstance(self.per, timedelta) or self.per < timedelta(milliseconds=1):
            errors.append(f"'per' must be a timedelta of at least 1 ms, not {self.per!r}.")
        if not (self.key is None or isinstance(self.key, str) or callable(self.key)):
            errors.append(f"'key' must be a string, a callable or None, not {self.key!r}.")
        if self.group is not None and (not isinstance(self.group, str) or not self.group):
            errors.append(f"'group' must be a non-empty string, not {self.group!r}.")
        return errors

    def key_for(self, task: Task[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
        """The rate key of one call: ``<group or task path>/<key>``; no key
        (or None from its callable) is "" after the slash."""
        return key_from_call(
            self.key,
            task,
            args,
            kwargs,
            what="rate limit key",
            group=self.group,
            part=_part,
            max_length=KEY_MAX_LENGTH,
        )

    def window_of(self, micros: int) -> int:
        """The start (microseconds since the epoch) of the window that
        holds ``micros``."""
        size = self.per // timedelta(microseconds=1)
        return micros - micros % size


def _rate_limit(
    *, to: int, per: timedelta, key: str | KeyFunction | None = None, group: str | None = None
) -> Rate:
    """Start at most ``to`` jobs of a task per ``per``, per key, over every
    worker; the others wait, in priority order, for the next window."""
    return Rate(to=to, per=per, key=key, group=group)


RATE_LIMIT = Option(name="rate_limit", kind=Rate, make=_rate_limit, problems=Rate.validate)
rate_limit = RATE_LIMIT.decorator()
limit_for = RATE_LIMIT.of


def rate_key(task: Task[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    """The job's rate key, or "" when the task has no rate limit."""
    rate = limit_for(task)
    return "" if rate is None else rate.key_for(task, args, kwargs)


def _part(value: Any) -> str:
    return "" if value is None else key_part(value)
