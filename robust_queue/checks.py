"""System checks: backend and app wiring, database features, options,
``ROBUST_QUEUE``'s keys and values, and the modules that hold tasks.

``manage.py check`` runs them, and so does ``manage.py robust_queue``
(``--check`` too) before it looks at anything else.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.core import checks

from . import conf
from .compat import InvalidTask
from .exceptions import ConfigurationError
from .options import discovery
from .processes.config import SupervisorConfig
from .processes.launch import problems

TAG = "robust_queue"


@checks.register(TAG)
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Unknown ``ROBUST_QUEUE`` keys, bad values, task modules that fail."""
    messages = [*_unknown_keys()]
    invalid = conf.invalid_values()
    if invalid:
        # Everything below reads these values: they come first.
        return messages + [checks.Error(problem, id="robust_queue.E023") for problem in invalid]
    messages += _task_modules()
    if not any(message.id == "robust_queue.E021" for message in messages):
        # Validating recurring tasks imports the task modules again.
        messages += _values()
    return messages


def _unknown_keys() -> Iterator[checks.CheckMessage]:
    known = sorted(conf.KEYS)
    for key in conf.unknown_keys():
        close = difflib.get_close_matches(key, known, n=1)
        guess = f"Did you mean {close[0]!r}? " if close else ""
        yield checks.Error(
            f"ROBUST_QUEUE has unknown key {key!r}: it is ignored.",
            hint=f"{guess}Known keys: {', '.join(known)}.",
            id="robust_queue.E020",
        )


def _task_modules() -> Iterator[checks.CheckMessage]:
    for module, exc in discovery.discover().errors.items():
        yield checks.Error(
            f"The task module {module!r} cannot be imported"
            f"{discovery.where(module, exc)}: {type(exc).__name__}: {exc}",
            hint=_queues_hint() if isinstance(exc, InvalidTask) else None,
            id="robust_queue.E021",
        )


def _queues_hint() -> str:
    allowed = {
        alias: list(params.get("QUEUES", ["default"]))
        for alias, params in (getattr(settings, "TASKS", None) or {}).items()
        if alias in conf.robust_queue_aliases()
    }
    listed = "; ".join(f"TASKS[{a!r}]['QUEUES'] is {q!r}" for a, q in allowed.items() if q)
    return (
        f"A task there uses a queue its backend does not allow ({listed}). "
        "Add the queue to that list, or make it [] to allow any queue name."
    )


def _values() -> list[checks.CheckMessage]:
    try:
        config = SupervisorConfig.from_settings()
    except (ConfigurationError, TypeError, ValueError) as exc:
        return [checks.Error(f"Invalid ROBUST_QUEUE settings: {exc}", id="robust_queue.E023")]
    return [checks.Error(problem, id="robust_queue.E023") for problem in problems(config)]
