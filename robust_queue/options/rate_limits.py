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

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import models

from ..compat import Task
from ..exceptions import ConfigurationError, EnqueueError
from .decorators import with_option

# A rate-limited job waits as a blocked job on this key prefix.
WAITING_PREFIX = "rate:"
KEY_MAX_LENGTH = 255 - len(WAITING_PREFIX)

KeyFunction = Callable[..., Any]


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
        """The rate key of one call: ``<group or task path>/<key>``."""
        value = self.key
        if callable(value):
            try:
                value = value(*args, **kwargs)
            except Exception as exc:
                raise EnqueueError(
                    f"The rate limit key of task {task.module_path} could not be "
                    f"computed from its arguments: {type(exc).__name__}: {exc}"
                ) from exc
        key = f"{self.group or task.module_path}/{'' if value is None else _key_part(value)}"
        if len(key) > KEY_MAX_LENGTH:
            digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
            key = f"{key[: KEY_MAX_LENGTH - 65]}#{digest}"
        return key

    def window_of(self, micros: int) -> int:
        """The start (microseconds since the epoch) of the window that
        holds ``micros``."""
        size = self.per // timedelta(microseconds=1)
        return micros - micros % size


def build_rate(*, to: Any, per: Any, key: Any = None, group: Any = None) -> Rate:
    """A validated ``Rate``; ``ConfigurationError`` lists what is wrong."""
    rate = Rate(to=to, per=per, key=key, group=group)
    errors = rate.validate()
    if errors:
        raise ConfigurationError("rate_limit(): " + " ".join(errors))
    return rate


def rate_limit(
    *, to: int, per: timedelta, key: str | KeyFunction | None = None, group: str | None = None
) -> Callable[[Task[..., Any]], Task[..., Any]]:
    """Start at most ``to`` jobs of a task per ``per``, per key, over every
    worker; the others wait, in priority order, for the next window."""
    rate = build_rate(to=to, per=per, key=key, group=group)

    def decorator(task: Task[..., Any]) -> Task[..., Any]:
        return with_option("rate_limit", task, rate)

    return decorator


def rate_from(value: object) -> Rate:
    """The ``@task(rate_limit=...)`` keyword: a dict of ``rate_limit()``
    options or a ``Rate``."""
    if isinstance(value, Rate):
        return value
    if not isinstance(value, Mapping):
        raise ConfigurationError(
            f"@task(rate_limit=...) takes a dict of rate_limit() options, not {value!r}."
        )
    try:
        return build_rate(**value)
    except TypeError as exc:
        raise ConfigurationError(f"@task(rate_limit=...): {exc}") from exc


def limit_for(task: Task[..., Any] | None) -> Rate | None:
    """The rate limit ``task`` carries, if any (None for no task)."""
    rate = getattr(task, "rate_limit", None)
    return rate if isinstance(rate, Rate) else None


def rate_key(task: Task[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    """The job's rate key, or "" when the task has no rate limit."""
    rate = limit_for(task)
    return "" if rate is None else rate.key_for(task, args, kwargs)


def _key_part(value: Any) -> str:
    if isinstance(value, models.Model):
        return f"{value._meta.label_lower}:{value.pk}"
    if isinstance(value, (list, tuple)):
        return "/".join(_key_part(item) for item in value)
    return str(value)
