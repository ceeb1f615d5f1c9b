"""Example tasks for the demo and the test suite."""

from __future__ import annotations

import asyncio
import time

from robust_queue.compat import TaskContext, task

from .models import LedgerEntry


@task()
def add(a: int, b: int) -> int:
    return a + b


@task(priority=10, queue_name="reports")
def report(n: int) -> dict:
    return {"report": n, "rows": list(range(n))}


@task()
async def async_add(a: int, b: int) -> int:
    await asyncio.sleep(0)
    return a + b


@task()
def fail(message: str = "boom") -> None:
    raise ValueError(message)


@task(takes_context=True)
def with_context(context: TaskContext, value: str) -> dict:
    return {
        "attempt": context.attempt,
        "result_id": context.task_result.id,
        "value": value,
    }


@task()
def returns_set() -> set:
    return {1, 2}


@task()
def echo(*args: object, **kwargs: object) -> dict:
    return {"args": [repr(a) for a in args], "kwargs": {k: repr(v) for k, v in kwargs.items()}}


@task()
def record(key: str, sleep: float = 0.0) -> str:
    """Write one ledger row per run, so tests can prove exactly-once."""
    if sleep:
        time.sleep(sleep)
    LedgerEntry.objects.create(key=key)
    return key


@task()
def sleep_for(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


not_a_task = add.func
