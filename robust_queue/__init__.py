"""Robust Queue: a database-backed backend for Django's Tasks framework.

Nothing here reads settings or models at import time; the public helpers
are imported lazily on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "Batch": "robust_queue.batches",
    "Snooze": "robust_queue.exceptions",
    "acancel": "robust_queue.cancellation",
    "aenqueue_once": "robust_queue.enqueueing",
    "batch": "robust_queue.batches",
    "cancel": "robust_queue.cancellation",
    "cancel_requested": "robust_queue.cancellation",
    "chain": "robust_queue.dependencies",
    "enqueue_after": "robust_queue.dependencies",
    "enqueue_all": "robust_queue.enqueueing",
    "enqueue_once": "robust_queue.enqueueing",
    "job_metadata": "robust_queue.enqueue_metadata",
    "job_tags": "robust_queue.tagging",
    "limits_concurrency": "robust_queue.concurrency",
    "metadata": "robust_queue.enqueue_metadata",
    "on_enqueue": "robust_queue.enqueue_metadata",
    "areschedule": "robust_queue.rescheduling",
    "rate_limit": "robust_queue.rate_limits",
    "recurring": "robust_queue.recurrence",
    "reschedule": "robust_queue.rescheduling",
    "retain": "robust_queue.task_retention",
    "retry": "robust_queue.retries",
    "tags": "robust_queue.tagging",
    "time_limit": "robust_queue.time_limits",
    "unique": "robust_queue.uniqueness",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'robust_queue' has no attribute {name!r}")
    return getattr(import_module(module), name)
