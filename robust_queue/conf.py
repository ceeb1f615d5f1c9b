"""Typed, lazy reads of ``TASKS[alias]["OPTIONS"]`` and ``ROBUST_QUEUE``.

Nothing here runs at import: every value is read when it is asked for, so
``override_settings`` and late configuration work.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings

DEFAULT_DATABASE = "default"
DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024
DEFAULT_CLEAR_FINISHED_JOBS_AFTER = timedelta(days=1)

BACKEND_PATH = "robust_queue.backend.RobustQueueBackend"


def robust_queue_settings() -> dict[str, Any]:
    """The ``ROBUST_QUEUE`` setting, or an empty dict."""
    value = getattr(settings, "ROBUST_QUEUE", None) or {}
    return dict(value)


def setting(name: str, default: Any = None) -> Any:
    """One key of ``ROBUST_QUEUE``, with a default."""
    return robust_queue_settings().get(name, default)


def backend_options(alias: str) -> dict[str, Any]:
    """The ``OPTIONS`` of one ``TASKS`` alias."""
    tasks = getattr(settings, "TASKS", None) or {}
    return dict(tasks.get(alias, {}).get("OPTIONS", {}) or {})


def robust_queue_aliases() -> list[str]:
    """Every ``TASKS`` alias whose backend is Robust Queue."""
    tasks = getattr(settings, "TASKS", None) or {}
    return [
        alias
        for alias, params in tasks.items()
        if params.get("BACKEND") == BACKEND_PATH
    ]


def database_for(alias: str) -> str:
    """The database alias that holds the queue of one backend alias."""
    return str(backend_options(alias).get("database", DEFAULT_DATABASE))


def queue_database() -> str:
    """The database that processes work on: the first Robust Queue alias's."""
    explicit = setting("database")
    if explicit:
        return str(explicit)
    aliases = robust_queue_aliases()
    return database_for(aliases[0]) if aliases else DEFAULT_DATABASE


def max_payload_bytes(alias: str) -> int:
    options = backend_options(alias)
    return int(options.get("max_payload_bytes", DEFAULT_MAX_PAYLOAD_BYTES))


def preserve_finished_jobs() -> bool:
    return bool(setting("preserve_finished_jobs", True))


def clear_finished_jobs_after() -> timedelta:
    value = setting("clear_finished_jobs_after", DEFAULT_CLEAR_FINISHED_JOBS_AFTER)
    return _as_timedelta(value)


def clear_failed_jobs_after() -> timedelta | None:
    value = setting("clear_failed_jobs_after")
    return None if value is None else _as_timedelta(value)


def task_modules() -> list[str]:
    """Modules outside installed apps from which tasks may be imported."""
    return [str(name) for name in setting("task_modules", [])]


def _as_timedelta(value: Any) -> timedelta:
    if isinstance(value, timedelta):
        return value
    return timedelta(seconds=float(value))
