"""Lifecycle hooks for the process tests: append a line per call to a file."""

from __future__ import annotations

import os
from typing import Any


def _record(process: Any, event: str) -> None:
    path = os.environ.get("ROBUST_QUEUE_HOOK_LOG")
    if path:
        with open(path, "a") as log:
            log.write(f"{process.kind} {event} {os.getpid()}\n")


def started(process: Any) -> None:
    _record(process, "on_start")


def stopped(process: Any) -> None:
    _record(process, "on_stop")


def exited(process: Any) -> None:
    _record(process, "on_exit")
