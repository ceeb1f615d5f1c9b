"""What the decorators stacked over ``@task`` share."""

from __future__ import annotations

from typing import Any

from .compat import Task
from .exceptions import ConfigurationError


def require_task(decorator: str, task: Any) -> Task:
    """``task`` itself, or a clear error if ``@decorator`` was not stacked
    over ``@task``."""
    if not isinstance(task, Task):
        raise ConfigurationError(
            f"@{decorator} must be stacked over @task, not applied to {task!r}."
        )
    return task
