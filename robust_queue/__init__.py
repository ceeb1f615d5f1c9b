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
    "Progress": "robust_queue.running.progress",
    "Snooze": "robust_queue.exceptions",
    "Step": "robust_queue.running.steps",
    "acancel": "robust_queue.operations.cancellation",
    "add_schedule": "robust_queue.operations.schedules",
    "aedit_job": "robust_queue.operations.editing",
    "aliases": "robust_queue.options.aliases",
    "aenqueue_once": "robust_queue.enqueueing.many",
    "aprogress": "robust_queue.running.progress",
    "await_result": "robust_queue.operations.waiting",
    "batch": "robust_queue.enqueueing.batches",
    "cancel": "robust_queue.operations.cancellation",
    "cancel_requested": "robust_queue.operations.cancellation",
    "chain": "robust_queue.enqueueing.dependencies",
    "change_schedule": "robust_queue.operations.schedules",
    "edit_job": "robust_queue.operations.editing",
    "encrypted": "robust_queue.options.encryption",
    "fair_group": "robust_queue.options.fair_groups",
    "enqueue_after": "robust_queue.enqueueing.dependencies",
    "enqueue_all": "robust_queue.enqueueing.many",
    "enqueue_once": "robust_queue.enqueueing.many",
    "job_group": "robust_queue.options.fair_groups",
    "job_log": "robust_queue.options.job_logs",
    "job_metadata": "robust_queue.running.enqueue_metadata",
    "job_tags": "robust_queue.options.tagging",
    "limits_concurrency": "robust_queue.options.concurrency",
    "metadata": "robust_queue.running.enqueue_metadata",
    "on_enqueue": "robust_queue.running.enqueue_metadata",
    "pause_schedule": "robust_queue.operations.schedules",
    "progress": "robust_queue.running.progress",
    "progress_of": "robust_queue.running.progress",
    "areschedule": "robust_queue.operations.rescheduling",
    "rate_limit": "robust_queue.options.rate_limits",
    "recurring": "robust_queue.options.recurrence",
    "remove_schedule": "robust_queue.operations.schedules",
    "reschedule": "robust_queue.operations.rescheduling",
    "resume_schedule": "robust_queue.operations.schedules",
    "retain": "robust_queue.options.task_retention",
    "retry": "robust_queue.options.retries",
    "steps": "robust_queue.running.steps",
    "tags": "robust_queue.options.tagging",
    "time_limit": "robust_queue.options.time_limits",
    "unique": "robust_queue.options.uniqueness",
    "wait_result": "robust_queue.operations.waiting",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'robust_queue' has no attribute {name!r}")
    return getattr(import_module(module), name)
