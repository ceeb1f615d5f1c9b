"""Robust Queue: a database-backed backend for Django's Tasks framework.

Nothing here reads settings or models at import time; the public helpers
are imported lazily on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "Batch": "robust_queue.enqueueing.batches",
    "Snooze": "robust_queue.exceptions",
    "acancel": "robust_queue.operations.cancellation",
    "aenqueue_once": "robust_queue.enqueueing.many",
    "batch": "robust_queue.enqueueing.batches",
    "cancel": "robust_queue.operations.cancellation",
    "cancel_requested": "robust_queue.operations.cancellation",
    "chain": "robust_queue.enqueueing.dependencies",
    "enqueue_after": "robust_queue.enqueueing.dependencies",
    "enqueue_all": "robust_queue.enqueueing.many",
    "enqueue_once": "robust_queue.enqueueing.many",
    "job_metadata": "robust_queue.running.enqueue_metadata",
    "job_tags": "robust_queue.options.tagging",
    "limits_concurrency": "robust_queue.options.concurrency",
    "metadata": "robust_queue.running.enqueue_metadata",
    "on_enqueue": "robust_queue.running.enqueue_metadata",
    "areschedule": "robust_queue.operations.rescheduling",
    "rate_limit": "robust_queue.options.rate_limits",
    "recurring": "robust_queue.options.recurrence",
    "reschedule": "robust_queue.operations.rescheduling",
    "retain": "robust_queue.options.task_retention",
    "retry": "robust_queue.options.retries",
    "tags": "robust_queue.options.tagging",
    "time_limit": "robust_queue.options.time_limits",
    "unique": "robust_queue.options.uniqueness",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'robust_queue' has no attribute {name!r}")
    return getattr(import_module(module), name)
