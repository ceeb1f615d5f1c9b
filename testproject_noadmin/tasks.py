"""Tasks of the project without the admin."""

from __future__ import annotations

from robust_queue.compat import task


@task()
def multiply(a: int, b: int) -> int:
    return a * b


@task()
def refuse(message: str) -> None:
    raise ValueError(message)
