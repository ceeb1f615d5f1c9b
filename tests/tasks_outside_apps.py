"""A Robust Queue task in a module outside the installed apps."""

from __future__ import annotations

from robust_queue.compat import task


@task()
def outside(value: int) -> int:
    return value + 1
