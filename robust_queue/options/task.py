"""The backend's ``task_class``: Django's ``Task`` plus Robust Queue options.

The options are fields, so ``.using()`` copies keep them; the decorators
stacked over ``@task`` (``@limits_concurrency``, ``@retry``) return a copy
with the option set. Django passes extra ``@task`` keyword arguments to the
backend's task class, so they can be declared there too, as the decorator's
options in a dict::

    @task(limits_concurrency={"key": lambda account: account, "to": 2})
    def sync(account): ...

which is the same as stacking ``@limits_concurrency(...)`` over ``@task``.
Likewise ``@task(unique=True)`` or ``@task(unique={"within": ...})`` is
``@unique(...)`` (see ``uniqueness.py``), ``@task(time_limit=30)`` is
``@time_limit(30)`` (``time_limits.py``), ``@task(tags=[...])`` is
``@tags(...)`` (``tagging.py``), ``@task(retain={...})`` is
``@retain(...)`` (``task_retention.py``), ``@task(rate_limit={...})``
is ``@rate_limit(...)`` (``rate_limits.py``),
``@task(aliases=[...])`` is ``@aliases(...)`` (``aliases.py``),
``@task(job_log=True)`` is ``@job_log()`` (``job_logs.py``), and
``@task(encrypted=True)`` is ``@encrypted`` (``encryption.py``), and
``@task(fair_group=...)`` is ``@fair_group(...)`` (``fair_groups.py``).

Each option is an ``Option`` (``option.py``), listed in ``OPTIONS``: it
builds the decorator, turns the keyword into the option's value in
``__post_init__`` (for ``.using()`` copies too) and reads it back
(``RETRY.of(task)``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeAlias

from django.utils.module_loading import import_string

from ..compat import Task
from ..exceptions import ConfigurationError
from .aliases import ALIASES
from .concurrency import LIMITS_CONCURRENCY, ConcurrencyLimit
from .encryption import ENCRYPTED, Encryption
from .fair_groups import FAIR_GROUP, FairGroup, declaration_problems
from .job_logs import JOB_LOG, JobLog
from .option import Option
from .rate_limits import RATE_LIMIT, Rate
from .retries import RETRY, RetryPolicy
from .tagging import TAGS
from .task_retention import RETAIN, TaskRetention
from .time_limits import TIME_LIMIT
from .uniqueness import UNIQUE, Uniqueness

# Every option of RobustQueueTask: each is a field of the same name.
OPTIONS: tuple[Option[..., Any], ...] = (
    LIMITS_CONCURRENCY,
    RETRY,
    UNIQUE,
    RATE_LIMIT,
    RETAIN,
    TAGS,
    TIME_LIMIT,
    ALIASES,
    JOB_LOG,
    ENCRYPTED,
    FAIR_GROUP,
)

# What Task.using() may change; everything else comes from the declaration.
USING_FIELDS = ("priority", "queue_name", "run_after", "backend")

if TYPE_CHECKING:
    # The backport's Task is generic (arguments, return value); Django's is
    # not subscriptable at run time.
    _TaskBase: TypeAlias = Task[..., Any]
else:
    _TaskBase = Task


@dataclass(frozen=True, slots=True, kw_only=True)
class RobustQueueTask(_TaskBase):
    limits_concurrency: ConcurrencyLimit | Mapping[str, Any] | None = None
    retry: RetryPolicy | Mapping[str, Any] | None = None
    # True, a dict of unique() options, or (once built) a Uniqueness.
    unique: Uniqueness | Mapping[str, Any] | bool | None = None
    # Seconds (a timedelta is turned into seconds); time_limits.py.
    time_limit: float | timedelta | None = None
    # Tags of every job of the task (tagging.py), sorted and distinct.
    tags: Sequence[str] | None = None
    # A dict of retain() options or (once built) a TaskRetention.
    retain: TaskRetention | Mapping[str, Any] | None = None
    # A dict of rate_limit() options or (once built) a Rate.
    rate_limit: Rate | Mapping[str, Any] | None = None
    # The import paths the task was known by (aliases.py), sorted and distinct.
    aliases: Sequence[str] | None = None
    # True, False or a dict of job_log() options; once built a JobLog.
    job_log: JobLog | Mapping[str, Any] | bool | None = None
    # True or a dict of encrypted() options; (once built) an Encryption.
    encrypted: Encryption | Mapping[str, Any] | bool | None = None
    # A group name or a dict of fair_group() options; once built a FairGroup.
    fair_group: FairGroup | Mapping[str, Any] | str | None = None

    def __post_init__(self) -> None:
        # Each option's declaration (a dict, True, seconds, ...) becomes
        # its value, or a ConfigurationError naming the keyword.
        for option in OPTIONS:
            value = option.declared(getattr(self, option.name))
            object.__setattr__(self, option.name, value)
        problems = declaration_problems(self)
        if problems:
            raise ConfigurationError(f"Task {self.module_path}: {problems[0]}")
        # After the options: the backend registers the task as it is.
        # Explicit base call: zero-argument super() breaks in slotted
        # dataclasses on Python 3.11.
        Task.__post_init__(self)

    def __reduce__(self) -> tuple[Any, ...]:
        # Options may hold lambdas (a concurrency key), which pickle cannot
        # carry: a task travels as its declaration's path plus what
        # .using() changed, and is rebuilt from the declaration.
        changes = {name: getattr(self, name) for name in USING_FIELDS}
        return (_unpickle, (self.module_path, changes))


def _unpickle(task_path: str, changes: dict[str, Any]) -> Task[..., Any]:
    task = import_string(task_path)
    if not isinstance(task, RobustQueueTask):
        raise ConfigurationError(
            f"{task_path!r} no longer names a Robust Queue task: cannot unpickle it."
        )
    return replace(task, **changes)
