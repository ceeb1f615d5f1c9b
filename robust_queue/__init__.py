"""Robust Queue: a database-backed backend for Django's Tasks framework.

Nothing here reads settings or models at import time; the public helpers
are imported lazily on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "enqueue_all": "robust_queue.backend",
    "limits_concurrency": "robust_queue.concurrency",
    "recurring": "robust_queue.recurrence",
    "retry": "robust_queue.retries",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'robust_queue' has no attribute {name!r}")
    return getattr(import_module(module), name)
