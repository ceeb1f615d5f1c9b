"""The only module that imports Django's Tasks framework.

Django >= 6.0 ships ``django.tasks``; Django 5.2 gets the same API from the
``django-tasks`` backport. Prefer the framework that is part of Django, and
send the signals of whichever one is in use: they are different objects.
"""

from __future__ import annotations

import inspect
from importlib.util import find_spec
from typing import TYPE_CHECKING

import django

from .exceptions import TasksFrameworkMissingError


def _require_backport() -> None:
    """Name the fix when neither framework is installed (not a bare import error)."""
    if find_spec("django_tasks") is None:
        raise TasksFrameworkMissingError(
            f"Robust Queue needs Django's Tasks framework: Django "
            f"{django.get_version()} has no django.tasks and the django-tasks "
            'backport is not installed. Run `pip install "robust-queue[backport]"` '
            "(the backport for Django 5.2), or upgrade to Django >= 6.0."
        )


if TYPE_CHECKING:
    # mypy reads the backport, which ships its types (py.typed); Django 5.2's
    # stubs have no django.tasks. Both frameworks expose the same API.
    from django_tasks import (
        DEFAULT_TASK_BACKEND_ALIAS,
        DEFAULT_TASK_QUEUE_NAME,
        TaskContext,
        TaskResult,
        TaskResultStatus,
        task,
        task_backends,
    )
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.base import TASK_MAX_PRIORITY, TASK_MIN_PRIORITY, Task, TaskError
    from django_tasks.exceptions import InvalidTaskError as InvalidTask
    from django_tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch
    from django_tasks.signals import task_enqueued, task_finished, task_started

    FRAMEWORK: str
else:
    try:
        from django.tasks import (
            DEFAULT_TASK_BACKEND_ALIAS,
            DEFAULT_TASK_QUEUE_NAME,
            Task,
            TaskContext,
            TaskResult,
            TaskResultStatus,
            task,
            task_backends,
        )
        from django.tasks.backends.base import (
            BaseTaskBackend,
        )
        from django.tasks.base import (
            TASK_MAX_PRIORITY,
            TASK_MIN_PRIORITY,
            TaskError,
        )
        from django.tasks.exceptions import (
            InvalidTask,
            TaskResultDoesNotExist,
            TaskResultMismatch,
        )
        from django.tasks.signals import (
            task_enqueued,
            task_finished,
            task_started,
        )

        FRAMEWORK = "django.tasks"
    except ImportError:
        _require_backport()
        from django_tasks import (
            DEFAULT_TASK_BACKEND_ALIAS,
            DEFAULT_TASK_QUEUE_NAME,
            TaskContext,
            TaskResult,
            TaskResultStatus,
            task,
            task_backends,
        )
        from django_tasks.backends.base import (
            BaseTaskBackend,
        )
        from django_tasks.base import (
            TASK_MAX_PRIORITY,
            TASK_MIN_PRIORITY,
            Task,
            TaskError,
        )
        from django_tasks.exceptions import (
            InvalidTaskError as InvalidTask,
        )
        from django_tasks.exceptions import (
            TaskResultDoesNotExist,
            TaskResultMismatch,
        )
        from django_tasks.signals import (
            task_enqueued,
            task_finished,
            task_started,
        )

        FRAMEWORK = "django_tasks"

# Django 6.0's @task takes only its own keywords; the backport and Django
# >= 6.1 hand any other keyword (limits_concurrency=...) to the task class.
TASK_TAKES_OPTIONS = any(
    parameter.kind is inspect.Parameter.VAR_KEYWORD
    for parameter in inspect.signature(task).parameters.values()
)

__all__ = [
    "DEFAULT_TASK_BACKEND_ALIAS",
    "DEFAULT_TASK_QUEUE_NAME",
    "FRAMEWORK",
    "TASK_MAX_PRIORITY",
    "TASK_MIN_PRIORITY",
    "TASK_TAKES_OPTIONS",
    "BaseTaskBackend",
    "InvalidTask",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultMismatch",
    "TaskResultStatus",
    "task",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]
