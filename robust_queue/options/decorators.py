"""What the decorators stacked over ``@task`` share."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from ..compat import Task
from ..exceptions import ConfigurationError


def with_option(option: str, task: Any, value: Any) -> Task[..., Any]:
    """A copy of ``task`` with ``option`` set to ``value``, or a clear error
    if ``@option`` was not stacked over ``@task`` for a Robust Queue backend.

    The options are fields of ``RobustQueueTask`` (a frozen dataclass), so
    ``.using()`` copies keep them.
    """
    require_task(option, task)
    if option not in {field.name for field in fields(task)}:
        raise ConfigurationError(
            f"@{option} must be stacked over @task for a Robust Queue backend: "
            f"task {task.module_path} runs on backend {task.backend!r}, whose "
            f"tasks ({type(task).__name__}) take no {option!r} option."
        )
    return replace(task, **{option: value})


def require_task(decorator: str, task: Any) -> Task[..., Any]:
    """``task`` itself, or a clear error if ``@decorator`` was not stacked
    over ``@task``."""
    if not isinstance(task, Task):
        raise ConfigurationError(
            f"@{decorator} must be stacked over @task, not applied to {task!r}."
        )
    return task
