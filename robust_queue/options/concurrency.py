"""Concurrency limits: how many jobs of one key may run at once.

``@limits_concurrency`` is stacked over ``@task``; it returns a copy of the
task that carries a ``ConcurrencyLimit`` (``RobustQueueTask.limits_concurrency``),
so ``.using()`` copies keep it. The enqueue path asks ``concurrency_key()``
for the job's key; dispatching takes a semaphore slot or blocks (or discards)
the job, and finalizing gives the slot back (see ``Semaphore`` and
``BlockedExecution``); the dispatcher runs the upkeep.

A leaf: nothing here imports the models or the task registry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from django.db import models

from .. import conf
from ..compat import Task
from ..exceptions import ConfigurationError, EnqueueError
from .decorators import with_option

ON_CONFLICT_CHOICES = ("block", "discard")
KEY_MAX_LENGTH = 255

OnConflict = Literal["block", "discard"]
KeyFunction = Callable[..., Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConcurrencyLimit:
    """At most ``to`` jobs of one key run at once; a slot is leased for
    ``duration`` (None: the ``default_concurrency_control_period``)."""

    key: str | KeyFunction
    to: int = 1
    duration: timedelta | None = None
    group: str | None = None
    on_conflict: OnConflict = "block"

    def validate(self) -> list[str]:
        errors = []
        if isinstance(self.to, bool) or not isinstance(self.to, int) or self.to < 1:
            errors.append(f"'to' must be an integer >= 1, not {self.to!r}.")
        if self.on_conflict not in ON_CONFLICT_CHOICES:
            errors.append(f"'on_conflict' must be 'block' or 'discard', not {self.on_conflict!r}.")
        if not (isinstance(self.key, str) or callable(self.key)):
            errors.append(f"'key' must be a string or a callable, not {self.key!r}.")
        if self.duration is not None and (
            not isinstance(self.duration, timedelta) or self.duration <= timedelta(0)
        ):
            errors.append(f"'duration' must be a positive timedelta, not {self.duration!r}.")
        if self.group is not None and not isinstance(self.group, str):
            errors.append(f"'group' must be a string, not {self.group!r}.")
        elif isinstance(self.group, str) and self.group.startswith(("rate:", "dep:")):
            # Those keys are the waiting lines of rate limits and of jobs
            # waiting for others (rate_limits.py, models/job_dependency.py).
            errors.append(f"'group' must not start with 'rate:' or 'dep:', not {self.group!r}.")
        return errors

    @property
    def lease(self) -> timedelta:
        """How long a slot is held before maintenance may expire it."""
        if self.duration is not None:
            return self.duration
        return conf.get(conf.DEFAULT_CONCURRENCY_CONTROL_PERIOD)

    def key_for(self, task: Task[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
        """The semaphore key of one call: ``<group or task path>/<key>``."""
        if callable(self.key):
            try:
                value = self.key(*args, **kwargs)
            except Exception as exc:
                raise EnqueueError(
                    f"The concurrency key of task {task.module_path} could not be "
                    f"computed from its arguments: {type(exc).__name__}: {exc}"
                ) from exc
        else:
            value = self.key
        key = f"{self.group or task.module_path}/{_key_part(value)}"
        if len(key) > KEY_MAX_LENGTH:
            digest = hashlib.sha256(key.encode()).hexdigest()
            key = f"{key[: KEY_MAX_LENGTH - 65]}#{digest}"
        return key


def concurrency_limit(
    key: str | KeyFunction,
    *,
    to: int = 1,
    duration: timedelta | None = None,
    group: str | None = None,
    on_conflict: OnConflict = "block",
) -> ConcurrencyLimit:
    """A validated ``ConcurrencyLimit``; ``ConfigurationError`` if not valid."""
    limit = ConcurrencyLimit(
        key=key, to=to, duration=duration, group=group, on_conflict=on_conflict
    )
    errors = limit.validate()
    if errors:
        raise ConfigurationError("limits_concurrency(): " + " ".join(errors))
    return limit


def limits_concurrency(
    key: str | KeyFunction,
    *,
    to: int = 1,
    duration: timedelta | None = None,
    group: str | None = None,
    on_conflict: OnConflict = "block",
) -> Callable[[Task[..., Any]], Task[..., Any]]:
    """Limit how many jobs of a task run at once, per key.

    ``key`` is a string or a callable over the task's arguments; model
    instances in it count by class and primary key. Tasks of one ``group``
    share their keys. A job over the limit waits as a blocked job, or with
    ``on_conflict="discard"`` is dropped at enqueue.
    """
    limit = concurrency_limit(key, to=to, duration=duration, group=group, on_conflict=on_conflict)

    def decorator(task: Task[..., Any]) -> Task[..., Any]:
        return with_option("limits_concurrency", task, limit)

    return decorator


def limit_for(task: Task[..., Any] | None) -> ConcurrencyLimit | None:
    """The limit ``task`` carries, if any (None for no task)."""
    limit = getattr(task, "limits_concurrency", None)
    return limit if isinstance(limit, ConcurrencyLimit) else None


def concurrency_key(task: Task[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    """The job's concurrency key, or "" when the task has no limit."""
    limit = limit_for(task)
    return "" if limit is None else limit.key_for(task, args, kwargs)


def _key_part(value: Any) -> str:
    if isinstance(value, models.Model):
        return f"{value._meta.label_lower}:{value.pk}"
    if isinstance(value, (list, tuple)):
        return "/".join(_key_part(item) for item in value)
    return str(value)
