"""Enqueueing beyond ``Task.enqueue``: many calls at once (``enqueue_all``)
and one call under an idempotency key of the caller's own
(``enqueue_once``). Each finds the task's backend and hands the calls to
it; ``robust_queue`` re-exports them.

Above the backend: the backend, the task options and the models never
import this module.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..backend import RobustQueueBackend, TaskCall
from ..compat import InvalidTask, Task, TaskResult
from ..exceptions import EnqueueError


def enqueue_all(calls: Iterable[TaskCall]) -> list[TaskResult[Any]]:
    """Enqueue ``(task, args, kwargs)`` triples in bulk, per backend.

    Results come back in the order of ``calls``.
    """
    calls = list(calls)
    by_backend: dict[str, list[int]] = {}
    for index, (task, _, _) in enumerate(calls):
        by_backend.setdefault(task.backend, []).append(index)
    results: list[TaskResult[Any] | None] = [None] * len(calls)
    for alias, indexes in by_backend.items():
        backend = calls[indexes[0]][0].get_backend()
        if not isinstance(backend, RobustQueueBackend):
            raise InvalidTask(f"Backend {alias!r} is not a RobustQueueBackend.")
        for index, result in zip(
            indexes, backend.enqueue_all(calls[i] for i in indexes), strict=True
        ):
            results[index] = result
    return [result for result in results if result is not None]


def enqueue_once(task: Task[..., Any], key: str, /, *args: Any, **kwargs: Any) -> TaskResult[Any]:
    """Enqueue ``task(*args, **kwargs)`` unless a job was enqueued with this
    idempotency ``key`` (per task) and is still kept, whatever its state:
    then that job's result is returned and nothing is written."""
    return _backend_of(task, key).enqueue_once(task, key, args, kwargs)


async def aenqueue_once(
    task: Task[..., Any], key: str, /, *args: Any, **kwargs: Any
) -> TaskResult[Any]:
    return await _backend_of(task, key).aenqueue_once(task, key, args, kwargs)


def _backend_of(task: Task[..., Any], key: object) -> RobustQueueBackend:
    if not isinstance(task, Task):
        raise EnqueueError(f"enqueue_once() takes a Task, not {task!r}.")
    if not isinstance(key, str) or not key:
        raise EnqueueError(
            f"The idempotency key of enqueue_once() must be a non-empty string, not {key!r}."
        )
    backend = task.get_backend()
    if not isinstance(backend, RobustQueueBackend):
        raise EnqueueError(
            f"enqueue_once() needs a task of a Robust Queue backend; {task.module_path} "
            f"uses backend {task.backend!r}."
        )
    return backend
