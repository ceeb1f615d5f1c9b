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

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from .. import conf, conversions
from .option import Option

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

    def validate(self) -> list[str]:
        return _problems({"finished": self.finished, "failed": self.failed})

    def own(self, option: str) -> bool:
        """Whether ``option`` is this task's own, not the global one."""
        return bool(getattr(self, option) != GLOBAL)

    def merged(self, other: TaskRetention) -> TaskRetention:
        """``other``'s own options over this one's."""
        return TaskRetention(
            finished=other.finished if other.own("finished") else self.finished,
            failed=other.failed if other.own("failed") else self.failed,
        )


def _retain(*, finished: Any = GLOBAL, failed: Any = GLOBAL) -> TaskRetention:
    """Keep this task's finished / failed jobs for their own time."""
    return TaskRetention(finished=_duration(finished), failed=_duration(failed))


RETAIN = Option(
    name="retain",
    kind=TaskRetention,
    make=_retain,
    problems=TaskRetention.validate,
    takes="a dict with 'finished' and/or 'failed'",
)
retain = RETAIN.decorator()


def from_settings() -> dict[str, TaskRetention]:
    """Task path -> its retention from ``ROBUST_QUEUE["task_retention"]``
    ({} while the setting is invalid: the checks report it)."""
    if validate_settings():
        return {}
    entries = conf.get(conf.TASK_RETENTION) or {}
    return {path: RETAIN.build(**options) for path, options in entries.items()}


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
            given = {k: v for k, v in options.items() if k in OPTIONS}
            problems += [f"{where}: {problem}" for problem in _problems(given)]
    return problems


def _problems(options: Mapping[str, Any]) -> list[str]:
    given = {name: value for name, value in options.items() if value != GLOBAL}
    if not given:
        return ["needs 'finished' and/or 'failed'."]
    return [
        f"'{name}' must be a positive timedelta or number of seconds, or None "
        f"(keep them), not {value!r}."
        for name, value in given.items()
        if value is not None and not _is_duration(value)
    ]


def _duration(value: Any) -> Any:
    """A positive duration as a timedelta; anything else as given (None,
    GLOBAL, or a value that ``_problems`` refuses)."""
    return conversions.positive_duration(value) if _is_duration(value) else value


def _is_duration(value: Any) -> bool:
    if value is None or value == GLOBAL:
        return False
    try:
        conversions.positive_duration(value)
    except ValueError:
        return False
    return True
