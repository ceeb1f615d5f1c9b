"""Cluster-wide queue caps: ``ROBUST_QUEUE["queues"]``.

``{"mail": {"max_concurrency": 5}}`` lets at most 5 jobs of queue ``mail``
run at once over every worker on every host; the claim enforces it
(``ReadyExecution.objects.claim``, ``models/queue_cap.py``). Queues not
named here are claimed as if no cap existed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import conf
from ..options.validation import QUEUE_NAME_RULE, is_valid_queue_name

KNOWN_OPTIONS = ("max_concurrency",)
_WHERE = 'ROBUST_QUEUE["queues"]'


def caps() -> dict[str, int]:
    """Queue name -> the most jobs of it that may run at once."""
    if validate_settings():
        # Checks report it; a worker never guesses at a bad setting.
        return {}
    queues = conf.get(conf.QUEUES) or {}
    return {
        name: options["max_concurrency"]
        for name, options in queues.items()
        if options.get("max_concurrency") is not None
    }


def validate_settings() -> list[str]:
    """Problems with ``ROBUST_QUEUE["queues"]``, for system checks."""
    queues = conf.get(conf.QUEUES)
    if queues is None:
        return []
    if not isinstance(queues, Mapping):
        return [f"{_WHERE} must be a dict of queue name -> options, not {queues!r}"]
    problems = []
    for name, options in queues.items():
        problems += _queue_problems(name, options)
    return problems


def _queue_problems(name: Any, options: Any) -> list[str]:
    where = f"{_WHERE}[{name!r}]"
    if not is_valid_queue_name(name):
        return [f"{_WHERE} has queue name {name!r}: a queue name is {QUEUE_NAME_RULE}"]
    if not isinstance(options, Mapping):
        return [f"{where} must be a dict of options such as max_concurrency, not {options!r}"]
    problems = [
        f"{where} has unknown option {key!r} (known: {', '.join(KNOWN_OPTIONS)})"
        for key in options
        if key not in KNOWN_OPTIONS
    ]
    cap = options.get("max_concurrency")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        problems.append(
            f'{where}["max_concurrency"] must be a whole number >= 1 or None (no cap), not {cap!r}'
        )
    return problems
