"""Tasks that report progress, and a task that ends when a test says so,
for the progress and waiting tests."""

from __future__ import annotations

import os
import time

import robust_queue
from robust_queue.compat import TaskContext, task


@task(takes_context=True)
def count_to(context: TaskContext, total: int, note: str = "") -> list[bool]:
    """Report 1..``total`` of ``total`` in a tight loop; what each call answered."""
    return [robust_queue.progress(context, done, total, note) for done in range(1, total + 1)]


@task(takes_context=True)
async def async_count_to(context: TaskContext, total: int) -> int:
    for done in range(1, total + 1):
        await robust_queue.aprogress(context, done, total)
    return total


@task(takes_context=True)
def report_then_wait(context: TaskContext, done: int, total: int, note: str, gate: str) -> int:
    """Report ``done`` of ``total``, then run until the file ``gate`` exists."""
    robust_queue.progress(context, done, total, note)
    deadline = time.monotonic() + 60
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.01)
    return done


@task()
def until_exists(gate: str, fail: bool = False) -> str:
    """Run until the file ``gate`` exists; then return, or raise if ``fail``."""
    deadline = time.monotonic() + 60
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.005)
    if fail:
        raise RuntimeError("failed on purpose")
    return "done"
