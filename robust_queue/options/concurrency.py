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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from .. import conf
from ..compat import Task
from .keys import KeyFunction, key_from_call
from .option import Option

ON_CONFLICT_CHOICES = ("block", "discard")
KEY_MAX_LENGTH = 255

OnConflict = Literal["block", "discard"]


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
        elif isinstance(self.group, str) and self.group.startswith(("rate:", "dep:", "fair:")):
            # Those keys are the waiting lines of rate limits and of jobs
            # waiting for others (rate_limits.py, models/job_dependency.py)
            # and the caps of fair groups (fair_groups.py).
            errors.append(
                f"'group' must not start with 'rate:', 'dep:' or 'fair:', not {self.group!r}."
            )
        return errors

    @property
    def lease(self) -> timedelta:
        """How long a slot is held before maintenance may expire it."""
        if self.duration is not None:
            return self.duration
        return conf.get(conf.DEFAULT_CONCURRENCY_CONTROL_PERIOD)

    def key_for(self, task: Task[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
        """The semaphore key of one call: ``<group or task path>/<key>``."""
        return key_from_call(
            self.key,
            task,
            args,
            kwargs,
            what="concurrency key",
            group=self.group,
            max_length=KEY_MAX_LENGTH,
        )


def _limits_concurrency(
    key: str | KeyFunction,
    *,
    to: int = 1,
    duration: timedelta | None = None,
    group: str | None = None,
    on_conflict: OnConflict = "block",
) -> ConcurrencyLimit:
    """Limit how many jobs of a task run at once, per key.

    ``key`` is a string or a callable over the task's arguments; model
    instances in it count by class and primary key. Tasks of one ``group``
    share their keys. A job over the limit waits as a blocked job, or with
    ``on_conflict="discard"`` is dropped at enqueue.
    """
    return ConcurrencyLimit(key=key, to=to, duration=duration, group=group, on_conflict=on_conflict)


LIMITS_CONCURRENCY = Option(
    name="limits_concurrency",
    kind=ConcurrencyLimit,
    make=_limits_concurrency,
    problems=ConcurrencyLimit.validate,
)
limits_concurrency = LIMITS_CONCURRENCY.decorator()
limit_for = LIMITS_CONCURRENCY.of


def concurrency_key(task: Task[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    """The job's concurrency key, or "" when the task has no limit."""
    limit = limit_for(task)
    return "" if limit is None else limit.key_for(task, args, kwargs)
