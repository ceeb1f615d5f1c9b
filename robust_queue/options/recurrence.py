"""Recurring tasks: cron schedules declared with ``@recurring`` or in
``ROBUST_QUEUE["recurring_tasks"]``.

Schedules are cron strings parsed by the ``crontab`` library and read in
the project's time zone. The scheduler process turns the definitions into
``RecurringTask`` rows and enqueues each slot once (see ``RecurringTask``).
Decorated tasks are found by importing every installed app's ``tasks``
module and the modules of ``ROBUST_QUEUE["task_modules"]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from crontab import CronTab
from django.utils import timezone

from .. import conf
from ..arguments import encode_arguments
from ..compat import TASK_MAX_PRIORITY, TASK_MIN_PRIORITY, Task
from ..exceptions import ConfigurationError, UnknownTaskError
from . import registry
from .option import require_task
from .registry import resolve_task
from .validation import queue_name_error

SETTING = conf.RECURRING_TASKS.name
KEY_MAX_LENGTH = 255
SETTINGS_FIELDS = {"task", "schedule", "args", "kwargs", "queue_name", "priority", "description"}

# Definitions made by @recurring in this process, by key.
_DECLARED: dict[str, RecurringDefinition] = {}


@dataclass(frozen=True, slots=True, kw_only=True)
class RecurringDefinition:
    """What to enqueue (a task path, encoded arguments) and when."""

    key: str
    schedule: str
    task_path: str
    backend: str = "default"
    arguments: dict[str, Any] = field(default_factory=dict)
    queue_name: str = ""
    priority: int | None = None
    description: str = ""

    def validate(self) -> list[str]:
        where = f"Recurring task {self.key!r}"
        errors = [key_error(self.key), schedule_error(self.schedule)]
        errors += option_errors(self.queue_name, self.priority)
        return [f"{where}: {error}" for error in errors if error]


def key_error(key: object) -> str | None:
    """Why ``key`` cannot name a recurring task, or None."""
    if not key or not isinstance(key, str) or len(key) > KEY_MAX_LENGTH:
        return "the key must be a string of 1 to 255 characters."
    return None


def option_errors(queue_name: object, priority: object) -> list[str]:
    """What is wrong with a recurring task's queue and priority."""
    errors = []
    # "" is the task's own queue; any other must be one a task can use.
    if queue_name != "" and (error := queue_name_error(queue_name)):
        errors.append(error)
    if priority is not None and (
        isinstance(priority, bool)
        or not isinstance(priority, int)
        or not TASK_MIN_PRIORITY <= priority <= TASK_MAX_PRIORITY
    ):
        errors.append(
            f"priority must be an integer from {TASK_MIN_PRIORITY} "
            f"to {TASK_MAX_PRIORITY}, not {priority!r}."
        )
    return errors


def next_time(schedule: str, after: datetime, zone: tzinfo | None = None) -> datetime:
    """The first slot of ``schedule`` strictly after ``after``, read in
    ``zone`` (the project's time zone if None)."""
    value = CronTab(schedule).next(
        now=timezone.localtime(after, zone), delta=False, return_datetime=True, default_utc=False
    )
    return value  # type: ignore[no-any-return]


def previous_time(schedule: str, before: datetime, zone: tzinfo | None = None) -> datetime:
    """The last slot of ``schedule`` strictly before ``before``."""
    value = CronTab(schedule).previous(
        now=timezone.localtime(before, zone), delta=False, return_datetime=True, default_utc=False
    )
    return value  # type: ignore[no-any-return]


def schedule_error(schedule: object) -> str | None:
    """Why ``schedule`` is not a cron string, or None if it is one."""
    if not isinstance(schedule, str) or not schedule.strip():
        return f"the schedule must be a cron string, not {schedule!r}."
    try:
        CronTab(schedule)
    except ValueError as exc:
        return f"schedule {schedule!r} does not parse: {exc}."
    return None


def recurring(
    schedule: str,
    *,
    key: str | None = None,
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    queue_name: str | None = None,
    priority: int | None = None,
    description: str = "",
) -> Callable[[Task[..., Any]], Task[..., Any]]:
    """Enqueue a task on a cron schedule; stack over ``@task``.

    Repeat it with different ``key`` values (the default key is the
    task's path) to run one task on several schedules or arguments.
    """

    def decorator(task: Task[..., Any]) -> Task[..., Any]:
        require_task("recurring", task)
        definition = _definition(
            key or task.module_path,
            schedule,
            task,
            args,
            kwargs or {},
            queue_name=queue_name,
            priority=priority,
            description=description,
        )
        errors = definition.validate()
        if errors:
            raise ConfigurationError(" ".join(errors))
        existing = _DECLARED.get(definition.key)
        # Re-importing a module repeats its decorators: that is no clash.
        if existing is not None and existing != definition:
            raise ConfigurationError(
                f"Recurring task key {definition.key!r} is declared twice "
                f"({existing.task_path} and {definition.task_path}); give each "
                "@recurring its own key."
            )
        _DECLARED[definition.key] = definition
        return task

    return decorator


def declared() -> list[RecurringDefinition]:
    """Definitions made by ``@recurring`` in modules imported so far."""
    return list(_DECLARED.values())


def discover() -> None:
    """Import the modules where ``@recurring`` tasks may be declared."""
    registry.autodiscover()


def from_settings() -> tuple[list[RecurringDefinition], list[str]]:
    """Definitions of ``ROBUST_QUEUE["recurring_tasks"]`` and errors."""
    entries = conf.get(conf.RECURRING_TASKS) or {}
    if not isinstance(entries, Mapping):
        return [], [f"ROBUST_QUEUE[{SETTING!r}] must be a dict of key -> task."]
    definitions, errors = [], []
    for key, entry in entries.items():
        try:
            definition = _from_entry(key, entry)
        except ConfigurationError as exc:
            errors.append(str(exc))
            continue
        definitions.append(definition)
        errors += definition.validate()
    return definitions, errors


def validate_recurring() -> list[str]:
    """Every problem with the recurring tasks, for ``--check`` and startup."""
    try:
        discover()
    except ImportError as exc:
        return [f"Recurring tasks: a task module cannot be imported: {exc}"]
    definitions, errors = from_settings()
    for definition in definitions:
        if definition.key in _DECLARED:
            errors.append(
                f"Recurring task key {definition.key!r} is declared both with "
                f"@recurring and in ROBUST_QUEUE[{SETTING!r}]."
            )
    return errors


def declared_keys() -> set[str]:
    """Keys declared in code: by ``@recurring`` (after discovery) and in
    ``ROBUST_QUEUE["recurring_tasks"]``."""
    discover()
    entries = conf.get(conf.RECURRING_TASKS) or {}
    return {*_DECLARED, *(entries if isinstance(entries, Mapping) else ())}


def task_for_path(task_path: str) -> Task[..., Any]:
    """The declared task of ``task_path``, bound to the alias it was
    declared with; raises ``UnknownTaskError`` as ``resolve_task`` does."""
    return resolve_task(task_path, _alias_of(task_path))


def definitions() -> list[RecurringDefinition]:
    """All valid definitions; raises ``ConfigurationError`` otherwise."""
    errors = validate_recurring()
    if errors:
        raise ConfigurationError("Invalid recurring tasks: " + " ".join(errors))
    return [*declared(), *from_settings()[0]]


def _from_entry(key: str, entry: object) -> RecurringDefinition:
    where = f"ROBUST_QUEUE[{SETTING!r}][{key!r}]"
    if not isinstance(entry, Mapping):
        raise ConfigurationError(f"{where} must be a dict with 'task' and 'schedule'.")
    unknown = set(entry) - SETTINGS_FIELDS
    if unknown:
        raise ConfigurationError(f"{where} has unknown fields: {', '.join(sorted(unknown))}.")
    try:
        task = task_for_path(str(entry.get("task")))
    except UnknownTaskError as exc:
        raise ConfigurationError(f"{where}: {exc}") from exc
    return _definition(
        key,
        entry.get("schedule"),
        task,
        entry.get("args", ()),
        entry.get("kwargs", {}),
        queue_name=entry.get("queue_name"),
        priority=entry.get("priority"),
        description=entry.get("description", ""),
    )


def _alias_of(task_path: object) -> str:
    # The alias the task was declared with; resolve_task() explains what
    # is wrong with a path that names no declared task.
    aliases = conf.robust_queue_aliases()
    if not aliases:
        raise UnknownTaskError("No TASKS alias uses the Robust Queue backend.")
    declared = registry.declared(str(task_path))
    backend = getattr(declared, "backend", None)
    return backend if backend in aliases else aliases[0]


def _definition(
    key: str, schedule: Any, task: Task[..., Any], args: Any, kwargs: Any, **options: Any
) -> RecurringDefinition:
    try:
        arguments = encode_arguments(list(args), dict(kwargs))
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(
            f"Recurring task {key!r}: its arguments cannot be stored: {exc}"
        ) from exc
    return RecurringDefinition(
        key=key,
        schedule=schedule,
        task_path=task.module_path,
        backend=task.backend,
        arguments=arguments,
        queue_name=options["queue_name"] or "",
        priority=options["priority"],
        description=options["description"] or "",
    )
