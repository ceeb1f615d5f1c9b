"""Running an ``async def`` task so that its watch can cancel it.

``Task.call`` runs a coroutine through ``async_to_sync``: an event loop in
a thread of its own, while the worker thread waits in C for the result,
where an asynchronous exception cannot reach it. Here the coroutine runs
the same way (``sync_to_async`` calls inside it still come back to the
worker thread, and its connection), but first tells its watch which loop
and task it runs in: a stop is then ``task.cancel()`` in that loop, and
an awaiting body ends with ``CancelledError`` where it awaits, without
ending its worker.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from asgiref.sync import async_to_sync, iscoroutinefunction

from ..running.performing import Body


class BodyWatch(Protocol):
    """What a running coroutine tells its watch (``watchdog.Watch``), which
    imports this module."""

    def attach(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None: ...

    def detach(self) -> None: ...


def is_async(body: Body) -> bool:
    """Whether ``body`` runs an ``async def`` task."""
    return iscoroutinefunction(body.task.func)


def run_cancellable(watch: BodyWatch, body: Body) -> Any:
    """Run ``body``'s coroutine in a new event loop, cancellable through
    ``watch`` (``Watch.interrupt``)."""
    return async_to_sync(_attached)(watch, body.task.func, body.args, body.kwargs)


async def _attached(
    watch: BodyWatch,
    func: Callable[..., Coroutine[Any, Any, Any]],
    args: list[Any],
    kwargs: dict[str, Any],
) -> Any:
    task = asyncio.current_task()
    assert task is not None
    watch.attach(asyncio.get_running_loop(), task)
    try:
        return await func(*args, **kwargs)
    finally:
        # The loop closes after this: a late stop must not reach it.
        watch.detach()
