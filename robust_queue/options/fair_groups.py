"""Fair groups: a tenant's (a customer's) jobs share a queue fairly.

A task declares how its jobs are grouped with ``@fair_group(key)``
stacked over ``@task`` (or ``@task(fair_group=...)``): ``key`` is a string
or a callable over the task's arguments (``lambda account, **_:
account.pk``); a callable that returns None leaves the job ungrouped.
``with job_group("acme"):`` sets the group of every job enqueued inside the
block, whatever its task declares. ``cap=N`` lets at most N jobs of one
group in one queue run at once: it is a concurrency limit whose key is
made of the queue and the group (``cap_key``), so the semaphores, blocked
jobs and their upkeep are those of ``@limits_concurrency``.

Workers take a group's jobs in rounds (``models/fair_rounds.py``); an
ungrouped job costs nothing more than before.

A leaf: nothing here reads settings or models.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ..compat import Task
from ..exceptions import ConfigurationError, EnqueueError
from .concurrency import ConcurrencyLimit
from .keys import KeyFunction, key_part
from .option import Option

GROUP_MAX_LENGTH = 100
GROUP_RULE = f"a string of 1 to {GROUP_MAX_LENGTH} characters without control characters"
# The concurrency keys of group caps: ``fair:<queue>/<group>``.
CAP_PREFIX = "fair:"

_CURRENT: ContextVar[str | None] = ContextVar("robust_queue_job_group", default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class FairGroup:
    """Jobs of one ``key`` share their queue fairly with other groups'; at
    most ``cap`` of them run at once per queue (None: no cap)."""

    key: str | KeyFunction
    cap: int | None = None

    def validate(self) -> list[str]:
        errors = []
        if isinstance(self.key, str):
            errors += group_problems(self.key)
        elif not callable(self.key):
            errors.append(f"'key' must be a string or a callable, not {self.key!r}.")
        cap = self.cap
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            errors.append(f"'cap' must be an integer >= 1 or None, not {cap!r}.")
        return errors

    def group_for(
        self, task: Task[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> str | None:
        """The group of one call; None if the key's callable gives None."""
        if isinstance(self.key, str):
            return self.key
        try:
            value = self.key(*args, **kwargs)
        except Exception as exc:
            raise EnqueueError(
                f"The fair group of task {task.module_path} could not be computed "
                f"from its arguments: {type(exc).__name__}: {exc}"
            ) from exc
        if value is None:
            return None
        group = key_part(value)
        problems = group_problems(group)
        if problems:
            raise EnqueueError(f"The fair group of task {task.module_path}: {problems[0]}")
        return group


def group_problems(value: object) -> list[str]:
    """What is wrong with ``value`` as a job's group (none: nothing)."""
    if isinstance(value, str) and 0 < len(value) <= GROUP_MAX_LENGTH and value.isprintable():
        return []
    return [f"group {value!r} is not {GROUP_RULE}."]


def _fair_group(key: str | KeyFunction, *, cap: int | None = None) -> FairGroup:
    """Claim this task's jobs fairly across groups of its queue.

    ``key`` is the group: a string, or a callable over the task's
    arguments (None: no group for that call). ``cap`` lets at most that
    many jobs of one group run at once in a queue; the others wait as
    blocked jobs.
    """
    return FairGroup(key=key, cap=cap)


def _keyword(value: object) -> object:
    # fair_group="acme" is @fair_group("acme").
    if isinstance(value, str):
        return FairGroup(key=value)
    return value


FAIR_GROUP = Option(
    name="fair_group",
    kind=FairGroup,
    make=_fair_group,
    problems=FairGroup.validate,
    takes="a group name or a dict of fair_group() options",
    keyword=_keyword,
)
fair_group = FAIR_GROUP.decorator()


@contextmanager
def job_group(name: str) -> Iterator[str]:
    """Put every job enqueued inside the block in group ``name`` (an inner
    block wins). A bad name raises here, before any enqueue."""
    problems = group_problems(name)
    if problems:
        raise ConfigurationError("job_group(): " + " ".join(problems))
    token = _CURRENT.set(name)
    try:
        yield name
    finally:
        _CURRENT.reset(token)


def for_enqueue(task: Task[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> str | None:
    """The group of a job of ``task`` being enqueued now (None: none)."""
    current = _CURRENT.get()
    if current is not None:
        return current
    declared = getattr(task, "fair_group", None)
    if declared is None:
        return None
    assert isinstance(declared, FairGroup)
    return declared.group_for(task, args, kwargs)


def cap_key(task: Task[..., Any], queue_name: str, group: str) -> str:
    """The concurrency key of ``group``'s cap in ``queue_name``; "" if the
    task declares no cap."""
    declared = getattr(task, "fair_group", None)
    if not isinstance(declared, FairGroup) or declared.cap is None:
        return ""
    return f"{CAP_PREFIX}{queue_name}/{group}"


def cap_limit(task: object) -> ConcurrencyLimit | None:
    """The concurrency limit a group cap of ``task`` stands for; None if
    it declares none."""
    declared = getattr(task, "fair_group", None)
    if not isinstance(declared, FairGroup) or declared.cap is None:
        return None
    return ConcurrencyLimit(key=CAP_PREFIX, to=declared.cap)


def declaration_problems(task: object) -> list[str]:
    """A task may cap its groups or limit its concurrency, not both: a
    job has one concurrency key."""
    declared = getattr(task, "fair_group", None)
    capped = isinstance(declared, FairGroup) and declared.cap is not None
    if capped and getattr(task, "limits_concurrency", None) is not None:
        return [
            "a task cannot take both @fair_group(cap=...) and @limits_concurrency: "
            "a job has one concurrency key. Drop the cap, or make the group the "
            "concurrency key."
        ]
    return []
