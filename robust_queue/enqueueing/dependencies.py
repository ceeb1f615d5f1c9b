"""Jobs that run after others: ``enqueue_after`` and ``chain``.

A job enqueued after its parents is READY to Django and waits (blocked on
``dep:``, "waiting on N" in the admin) until every parent has succeeded;
then it is dispatched like any job (ready, scheduled at its ``run_after``,
or blocked by its own limits). When a parent fails for good, is cancelled
or is discarded, it ends FAILED with ``DependencyFailedError``, and so do
its own dependents after it. The dispatcher does both
(``models/job_dependency.py``).

Parents must exist when the job is enqueued, so no cycle can be formed.
A parent that already succeeded counts as done; one that already failed
for good is refused (``DependencyError``), like an unknown id or a job of
another backend or database, and nothing is written.

Above the backend, like ``enqueueing.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias

from django.db import transaction

from ..backend import RobustQueueBackend, TaskCall
from ..compat import Task, TaskResult
from ..exceptions import DependencyError

Parent: TypeAlias = "str | TaskResult[Any]"
Step: TypeAlias = "Task[..., Any] | TaskCall"


def enqueue_after(
    parents: Iterable[Parent],
    task: Task[..., Any],
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
) -> TaskResult[Any]:
    """Enqueue ``task(*args, **kwargs)`` to run once every job of
    ``parents`` (result ids or ``TaskResult`` objects, at least one) has
    succeeded. Raises ``DependencyError`` and writes nothing for a parent
    that is unknown, of another backend or database, or failed."""
    backend = _backend_of(task)
    return backend.enqueue_after(_parent_ids(parents, task), task, args, kwargs or {})


def chain(steps: Iterable[Step], *, after: Parent | Iterable[Parent] = ()) -> list[TaskResult[Any]]:
    """Enqueue ``steps`` to run one after the other: each waits for the
    one before it (the first for ``after``, if given: one parent or
    several, as ``enqueue_after`` takes them). A step is a task
    (run without arguments) or a ``(task, args, kwargs)`` triple; every
    step uses one backend. All are written in one transaction, or none.

    A step that fails for good fails every step after it with
    ``DependencyFailedError``.
    """
    calls = [_call(step) for step in steps]
    if not calls:
        raise DependencyError("chain() needs at least one step.")
    backend = _backend_of(calls[0][0])
    # One id or result is one parent (a string is not a list of ids).
    parents = [after] if isinstance(after, (str, TaskResult)) else list(after)
    results: list[TaskResult[Any]] = []
    with transaction.atomic(using=backend.database):
        for task, args, kwargs in calls:
            if task.backend != calls[0][0].backend:
                raise DependencyError(
                    f"Every step of a chain uses one backend: {task.module_path} uses "
                    f"{task.backend!r}, the first step {calls[0][0].backend!r}."
                )
            if parents:
                results.append(enqueue_after(parents, task, args, kwargs))
            else:
                results.append(backend.enqueue(task, args, kwargs))
            parents = [results[-1]]
    return results


def _call(step: object) -> TaskCall:
    if isinstance(step, Task):
        return step, (), {}
    if isinstance(step, tuple) and len(step) == 3 and isinstance(step[0], Task):
        task, args, kwargs = step
        return task, args, kwargs
    raise DependencyError(f"A chain step is a Task or a (task, args, kwargs) triple, not {step!r}.")


def _parent_ids(parents: Iterable[Parent], task: Task[..., Any]) -> list[str]:
    if isinstance(parents, (str, TaskResult)):
        parents = [parents]
    ids: list[str] = []
    for parent in parents:
        if isinstance(parent, TaskResult):
            if parent.backend != task.backend:
                raise DependencyError(
                    f"Task {task.module_path} of backend {task.backend!r} cannot wait on "
                    f"job {parent.id} of backend {parent.backend!r}."
                )
            parent = parent.id
        if not isinstance(parent, str) or not parent:
            raise DependencyError(f"A parent is a result id or a TaskResult, not {parent!r}.")
        if parent not in ids:
            ids.append(parent)
    if not ids:
        raise DependencyError(f"enqueue_after() needs at least one parent for {task.module_path}.")
    return ids


def _backend_of(task: object) -> RobustQueueBackend:
    if not isinstance(task, Task):
        raise DependencyError(f"Only a Task can wait on other jobs, not {task!r}.")
    backend = task.get_backend()
    if not isinstance(backend, RobustQueueBackend):
        raise DependencyError(
            f"{task.module_path} uses backend {task.backend!r}, which is not a Robust Queue "
            "backend: it cannot wait on other jobs."
        )
    return backend
