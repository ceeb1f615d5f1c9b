"""Rules for what a task may name: its queue and its priority.

A queue name is 1-64 characters from ASCII letters, digits and ``_ - . :``.
The same rule holds wherever a queue is named: ``@task(queue_name=...)``,
worker selectors in ``ROBUST_QUEUE``, pauses and the admin's URLs. Names
compare byte-exact, so ``default`` and ``DEFAULT`` are two queues.

A priority is a whole number from -100 to 100; ``True`` and ``"5"`` are
refused with the same message as ``101``.
"""

from __future__ import annotations

import re
from typing import Any

from ..compat import TASK_MAX_PRIORITY, TASK_MIN_PRIORITY, InvalidTask

QUEUE_NAME_MAX_LENGTH = 64
QUEUE_NAME_CHARACTERS = "A-Za-z0-9_.:-"
# For URL patterns (no anchors) and validation (fullmatch).
QUEUE_NAME_REGEX = rf"[{QUEUE_NAME_CHARACTERS}]{{1,{QUEUE_NAME_MAX_LENGTH}}}"
QUEUE_NAME_RULE = f"1 to {QUEUE_NAME_MAX_LENGTH} characters from ASCII letters, digits and _ - . :"
PRIORITY_RULE = (
    f"priority must be a whole number between {TASK_MIN_PRIORITY} and {TASK_MAX_PRIORITY}."
)

_QUEUE_NAME = re.compile(QUEUE_NAME_REGEX)


def is_valid_queue_name(name: Any) -> bool:
    """Whether ``name`` is a str that follows the queue name rule."""
    return isinstance(name, str) and _QUEUE_NAME.fullmatch(name) is not None


def queue_name_error(name: Any) -> str | None:
    """Why ``name`` is not a valid queue name, or None if it is."""
    if is_valid_queue_name(name):
        return None
    if _is_long(name):
        shown = name[:20] + "..."
        return (
            f"Queue name {shown!r} is invalid (longer than "
            f"{QUEUE_NAME_MAX_LENGTH} characters): use {QUEUE_NAME_RULE}."
        )
    return f"Queue name {name!r} is invalid: use {QUEUE_NAME_RULE}."


def check_queue_name(name: Any) -> None:
    """Raise ``InvalidTask`` unless ``name`` is a valid queue name."""
    error = queue_name_error(name)
    if error is not None:
        raise InvalidTask(error)


def check_priority(priority: Any) -> None:
    """Raise ``InvalidTask`` unless ``priority`` is a whole number in range.

    Runs before Django's own check, which compares ``"5" < -100`` (a
    ``TypeError``) and takes ``True`` for 1.
    """
    if isinstance(priority, bool) or not isinstance(priority, (int, float)):
        raise InvalidTask(PRIORITY_RULE)
    if isinstance(priority, float) and not priority.is_integer():
        raise InvalidTask(PRIORITY_RULE)
    if not TASK_MIN_PRIORITY <= priority <= TASK_MAX_PRIORITY:
        raise InvalidTask(PRIORITY_RULE)


def check_task_names(task: Any) -> None:
    """The queue name and priority checks of ``validate_task``."""
    check_queue_name(task.queue_name)
    check_priority(task.priority)


def _is_long(name: Any) -> bool:
    return isinstance(name, str) and len(name) > QUEUE_NAME_MAX_LENGTH
