"""Tasks whose outcome is hard to store, for the finalize tests."""

from __future__ import annotations

import os
import time
from typing import Any

from django.db import connection

from robust_queue.compat import task

from .models import LedgerEntry

# Text every database but PostgreSQL stores: a NUL and a lone surrogate.
AWKWARD = {"nul": "before\x00after", "surrogate": "before\ud800after"}


def nested(depth: int) -> Any:
    """``depth`` lists, one inside the other."""
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


@task()
def returns_awkward(kind: str) -> str:
    return AWKWARD[kind]


@task()
def returns_nested(depth: int) -> Any:
    return nested(depth)


@task()
def returns_text(size: int) -> str:
    return "x" * size


@task()
def raises_awkward(kind: str, repeat: int = 1) -> None:
    raise ValueError(AWKWARD[kind] * repeat)


@task()
def raises_long(size: int) -> None:
    raise ValueError("m" * size)


@task()
def record_when_allowed(key: str, go_file: str, busy_timeout_ms: int = 0) -> str:
    """Record a run, then wait (up to 60 s) until ``go_file`` exists.

    ``busy_timeout_ms`` shortens SQLite's wait for a lock on this thread's
    connection, which the worker finalizes on too.
    """
    LedgerEntry.objects.create(key=key)
    if busy_timeout_ms:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    deadline = time.monotonic() + 60
    while not os.path.exists(go_file) and time.monotonic() < deadline:
        time.sleep(0.02)
    return key


@task()
def raise_when_allowed(key: str, go_file: str) -> None:
    """Record a run, wait (up to 60 s) until ``go_file`` exists, then
    raise ``ValueError(key)``."""
    record_when_allowed.call(key, go_file)
    raise ValueError(key)
