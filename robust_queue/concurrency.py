"""Concurrency limits: how many jobs of one key may run at once.

``@limits_concurrency`` is stacked over ``@task``; it records a
``ConcurrencyLimit`` for the task's path and returns the task unchanged.
The enqueue path asks ``concurrency_key()`` for the job's key; dispatching
takes a semaphore slot or blocks (or discards) the job, and finalizing gives
the slot back (see ``Semaphore`` and ``BlockedExecution``).

Nothing here touches the database or reads models at import time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from django.db import models

from . import conf
from .compat import Task
from .decorators import require_task
from .exceptions import ConfigurationError, EnqueueError, UnknownTaskError
from .registry import resolve_task

if TYPE_CHECKING:
    from .models import Job

DEFAULT_CONCURRENCY_CONTROL_PERIOD = timedelta(minutes=3)
ON_CONFLICT_CHOICES = ("block", "discard")
KEY_MAX_LENGTH = 255

OnConflict = Literal["block", "discard"]
KeyFunction = Callable[..., Any]

# Limits by task path: the Task is a frozen dataclass, so nothing is
# attached to it, and ``task.using(...)`` copies share the limit.
_LIMITS: dict[str, ConcurrencyLimit] = {}


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
            errors.append(
                f"'on_conflict' must be 'block' or 'discard', not {self.on_conflict!r}."
            )
        if not (isinstance(self.key, str) or callable(self.key)):
            errors.append(f"'key' must be a string or a callable, not {self.key!r}.")
        if self.duration is not None and (
            not isinstance(self.duration, timedelta) or self.duration <= timedelta(0)
        ):
            errors.append(f"'duration' must be a positive timedelta, not {self.duration!r}.")
        if self.group is not None and not isinstance(self.group, str):
            errors.append(f"'group' must be a string, not {self.group!r}.")
        return errors

    @property
    def lease(self) -> timedelta:
        """How long a slot is held before maintenance may expire it."""
        if self.duration is not None:
            return self.duration
        value = conf.setting(
            "default_concurrency_control_period", DEFAULT_CONCURRENCY_CONTROL_PERIOD
        )
        return value if isinstance(value, timedelta) else timedelta(seconds=float(value))

    def key_for(self, task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
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


def limits_concurrency(
    key: str | KeyFunction,
    *,
    to: int = 1,
    duration: timedelta | None = None,
    group: str | None = None,
    on_conflict: OnConflict = "block",
) -> Callable[[Task], Task]:
    """Limit how many jobs of a task run at once, per key.

    ``key`` is a string or a callable over the task's arguments; model
    instances in it count by class and primary key. Tasks of one ``group``
    share their keys. A job over the limit waits as a blocked job, or with
    ``on_conflict="discard"`` is dropped at enqueue.
    """
    limit = ConcurrencyLimit(
        key=key, to=to, duration=duration, group=group, on_conflict=on_conflict
    )
    errors = limit.validate()
    if errors:
        raise ConfigurationError("limits_concurrency(): " + " ".join(errors))

    def decorator(task: Task) -> Task:
        _LIMITS[require_task("limits_concurrency", task).module_path] = limit
        return task

    return decorator


def limit_for(task: Task) -> ConcurrencyLimit | None:
    return _LIMITS.get(task.module_path)


def concurrency_key(task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    """The job's concurrency key, or "" when the task has no limit."""
    limit = limit_for(task)
    return "" if limit is None else limit.key_for(task, args, kwargs)


def limit_for_job(job: Job) -> ConcurrencyLimit | None:
    """The limit of a stored job's task; None if the task is gone."""
    try:
        task = resolve_task(job.task_path, job.backend_alias)
    except UnknownTaskError:
        return None
    return limit_for(task)


def run_maintenance(using: str) -> int:
    """Expire semaphores, then release blocked jobs whose key has room.

    The dispatcher runs this every ``concurrency_maintenance_interval``;
    returns how many jobs were released.
    """
    # The models import this module, so they are imported here.
    from .models import BlockedExecution, Semaphore

    Semaphore.objects.using(using).expire_all_in_batches()
    return int(BlockedExecution.objects.using(using).release_all_with_room())


def _key_part(value: Any) -> str:
    if isinstance(value, models.Model):
        return f"{value._meta.label_lower}:{value.pk}"
    if isinstance(value, (list, tuple)):
        return "/".join(_key_part(item) for item in value)
    return str(value)
