"""The only module that imports Django's Tasks framework.

Django >= 6.0 ships ``django.tasks``; Django 5.2 gets the same API from the
``django-tasks`` backport. Prefer the framework that is part of Django, and
send the signals of whichever one is in use: they are different objects.
"""

from __future__ import annotations

try:
    from django.tasks import (  # type: ignore[import-not-found,unused-ignore]
        DEFAULT_TASK_BACKEND_ALIAS,
        DEFAULT_TASK_QUEUE_NAME,
        Task,
        TaskContext,
        TaskResult,
        TaskResultStatus,
        task,
        task_backends,
    )
    from django.tasks.backends.base import (  # type: ignore[import-not-found,unused-ignore]
        BaseTaskBackend,
    )
    from django.tasks.base import (  # type: ignore[import-not-found,unused-ignore]
        TASK_MAX_PRIORITY,
        TASK_MIN_PRIORITY,
        TaskError,
    )
    from django.tasks.exceptions import (  # type: ignore[import-not-found,unused-ignore]
        InvalidTask,
        TaskResultDoesNotExist,
        TaskResultMismatch,
    )
    from django.tasks.signals import (  # type: ignore[import-not-found,unused-ignore]
        task_enqueued,
        task_finished,
        task_started,
    )

    FRAMEWORK = "django.tasks"
except ImportError:
    from django_tasks import (  # type: ignore[no-redef,assignment,unused-ignore]
        DEFAULT_TASK_BACKEND_ALIAS,
        DEFAULT_TASK_QUEUE_NAME,
        TaskContext,
        TaskResult,
        TaskResultStatus,
        task,
        task_backends,
    )
    from django_tasks.backends.base import (  # type: ignore[no-redef,assignment,unused-ignore]
        BaseTaskBackend,
    )
    from django_tasks.base import (  # type: ignore[no-redef,assignment,unused-ignore]
        TASK_MAX_PRIORITY,
        TASK_MIN_PRIORITY,
        Task,
        TaskError,
    )
    from django_tasks.exceptions import (  # type: ignore[no-redef,assignment,unused-ignore]
        InvalidTaskError as InvalidTask,
    )
    from django_tasks.exceptions import (  # type: ignore[no-redef,assignment,unused-ignore]
        TaskResultDoesNotExist,
        TaskResultMismatch,
    )
    from django_tasks.signals import (  # type: ignore[no-redef,assignment,unused-ignore]
        task_enqueued,
        task_finished,
        task_started,
    )

    FRAMEWORK = "django_tasks"

__all__ = [
    "DEFAULT_TASK_BACKEND_ALIAS",
    "DEFAULT_TASK_QUEUE_NAME",
    "FRAMEWORK",
    "TASK_MAX_PRIORITY",
    "TASK_MIN_PRIORITY",
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
