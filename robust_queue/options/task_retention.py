"""Per-task retention: how long one task's finished and failed jobs are kept.

``@retain(finished=timedelta(days=30), failed=None)`` stacked over
``@task`` (or ``@task(retain={...})``), or by task path in settings::

    ROBUST_QUEUE = {"task_retention": {
        "reports.tasks.monthly": {"finished": timedelta(days=90)},
    }}

Each of ``finished`` and ``failed`` is a positive duration (a timedelta or
seconds), ``None`` (keep them: maintenance never clears them), or left out
(the global ``clear_finished_jobs_after`` / ``clear_failed_jobs_after``
applies). A settings entry wins over the decorator, option by option. The
built-in maintenance clears such a task's jobs by its own cutoffs and
leaves them out of the global pass (``retention.clear_expired``).

A leaf: nothing here reads models or the task registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from .. import conf, conversions
from ..compat import Task
from ..exceptions import ConfigurationError
from .decorators import with_option

# An option left out: the global setting applies.
GLOBAL: Final = "global"
OPTIONS = ("finished", "failed")
_WHERE = 'ROBUST_QUEUE["task_retention"]'

Keep = timedelta | None | str


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRetention:
    """How long a task's jobs are kept once finished / failed: a duration,
    None (always), or ``GLOBAL`` (the global setting's)."""

    finished: Keep = GLOBAL
    failed: Keep = GLOBAL

    def own(self, option: str) -> bool:
        """Whether ``option`` is this task's own, not the global one."""
        return bool(getattr(self, option) != GLOBAL)

    def merged(self, other: TaskRetention) -> TaskRetention:
        """``other``'s own options over this one's."""
        return TaskRetention(
            finished=other.finished if other.own("finished") else self.finished,
            failed=other.failed if other.own("failed") else self.failed,
        )


def build_retention(
    *, finished: Any = GLOBAL, failed: Any = GLOBAL, what: str = "retain()"
) -> TaskRetention:
    """A validated ``TaskRetention``; ``ConfigurationError`` names the problem."""
    problems = _problems({"finished": finished, "failed": failed}, what)
    if problems:
        raise ConfigurationError(" ".join(problems))
    return TaskRetention(finished=_duration(finished), failed=_duration(failed))


def retain(
    *, finished: Any = GLOBAL, failed: Any = GLOBAL
) -> Callable[[Task[..., Any]], Task[..., Any]]:
    """Keep this task's finished / failed jobs for their own time."""
    retention = build_retention(finished=finished, failed=failed)

    def decorator(task: Task[..., Any]) -> Task[..., Any]:
        return with_option("retain", task, retention)

    return decorator


def retention_from(value: object) -> TaskRetention:
    """The ``@task(retain=...)`` keyword: a dict of ``retain()`` options or
    a ``TaskRetention``."""
    if isinstance(value, TaskRetention):
        return value
    if not isinstance(value, Mapping) or set(value) - set(OPTIONS):
        raise ConfigurationError(
            f"@task(retain=...) takes a dict with 'finished' and/or 'failed', not {value!r}."
        )
    return build_retention(**value, what="@task(retain=...)")


def from_settings() -> dict[str, TaskRetention]:
    """Task path -> its retention from ``ROBUST_QUEUE["task_retention"]``
    ({} while the setting is invalid: the checks report it)."""
    if validate_settings():
        return {}
    entries = conf.get(conf.TASK_RETENTION) or {}
    return {path: build_retention(**options) for path, options in entries.items()}


def validate_settings() -> list[str]:
    """Problems with ``ROBUST_QUEUE["task_retention"]``, for system checks."""
    entries = conf.get(conf.TASK_RETENTION)
    if entries is None:
        return []
    if not isinstance(entries, Mapping):
        return [f"{_WHERE} must be a dict of task path -> options, not {entries!r}"]
    problems = []
    for path, options in entries.items():
        where = f"{_WHERE}[{path!r}]"
        if not isinstance(path, str) or not path:
            problems.append(f"{_WHERE} has key {path!r}: a key is a task's dotted path")
        elif not isinstance(options, Mapping) or not options:
            problems.append(
                f"{where} must be a dict with 'finished' and/or 'failed', not {options!r}"
            )
        else:
            unknown = sorted(map(str, set(options) - set(OPTIONS)))
            if unknown:
                problems.append(
                    f"{where} has unknown option(s) {', '.join(unknown)} (known: finished, failed)"
                )
            problems += _problems({k: v for k, v in options.items() if k in OPTIONS}, where)
    return problems


def _problems(options: Mapping[str, Any], what: str) -> list[str]:
    given = {name: value for name, value in options.items() if value != GLOBAL}
    if not given:
        return [f"{what} needs 'finished' and/or 'failed'."]
    return [
        f"{what}: '{name}' must be a positive timedelta or number of seconds, or None "
        f"(keep them), not {value!r}."
        for name, value in given.items()
        if value is not None and _duration(value) is None
    ]


def _duration(value: Any) -> Keep:
    """A positive duration as a timedelta; None or GLOBAL as themselves;
    None for anything else (the caller has refused it)."""
    if value is None or value == GLOBAL:
        return value  # type: ignore[no-any-return]
    try:
        return conversions.positive_duration(value)
    except ValueError:
        return None
