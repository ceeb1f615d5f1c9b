"""Batches of jobs with callbacks: ``robust_queue.batch``.

Jobs enqueued inside ``with batch(...)`` (any task of the batch's backend,
``enqueue`` or ``enqueue_all``) join it; ``Batch.add()`` opens it again
until it is complete. Once its block has ended and every job has run, the
dispatcher completes it and enqueues its callbacks once, in the same
transaction, each called with the batch id (``models/batch.py``):

- ``on_finish`` when every job has run, whatever the outcome;
- ``on_success`` then if none failed (after its retries);
- ``on_failure`` then if any failed for good, was cancelled or discarded.

Above the backend, like ``enqueueing.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from django.db import DatabaseError, transaction

from ..backend import RobustQueueBackend, raise_if_not_migrated
from ..compat import InvalidTask, Task, task_backends
from ..exceptions import BatchError
from ..models import Batch
from ..models.batch import Progress
from ..options import registry

__all__ = ["Batch", "Progress", "batch"]

DESCRIPTION_MAX_LENGTH = 255


@contextmanager
def batch(
    *,
    on_success: Task[..., Any] | None = None,
    on_failure: Task[..., Any] | None = None,
    on_finish: Task[..., Any] | None = None,
    description: str = "",
    properties: Mapping[str, Any] | None = None,
    backend: str | None = None,
) -> Iterator[Batch]:
    """Create a batch; enqueues inside the block join it.

    ``backend`` defaults to the callbacks' backend (they must agree), else
    ``"default"``. A callback must be a task of that backend taking the
    batch id as its one argument; ``properties`` must be JSON. Anything
    else raises ``BatchError`` and writes nothing. The batch is sealed
    when the block ends, however it ends.
    """
    callbacks = {"on_success": on_success, "on_failure": on_failure, "on_finish": on_finish}
    alias = _alias(backend, callbacks)
    store = _backend(alias)
    _check(description, properties)
    paths = {name: _path(name, task, alias) for name, task in callbacks.items()}
    try:
        with transaction.atomic(using=store.database):
            row = Batch.objects.using(store.database).create(
                backend_alias=alias,
                description=description,
                properties=dict(properties or {}),
                **paths,
            )
    except DatabaseError as exc:
        raise_if_not_migrated(store.database, exc)
        raise
    with row.open():
        yield row


def _alias(backend: str | None, callbacks: Mapping[str, Task[..., Any] | None]) -> str:
    aliases = {task.backend for task in callbacks.values() if isinstance(task, Task)}
    if backend is not None:
        return backend
    if len(aliases) > 1:
        raise BatchError(f"The callbacks of a batch use one backend, not {sorted(aliases)}.")
    return aliases.pop() if aliases else "default"


def _backend(alias: str) -> RobustQueueBackend:
    try:
        store = task_backends[alias]
    except Exception as exc:
        raise BatchError(f"No task backend {alias!r}.") from exc
    if not isinstance(store, RobustQueueBackend):
        raise BatchError(f"Backend {alias!r} is not a Robust Queue backend: it has no batches.")
    return store


def _path(name: str, task: object, alias: str) -> str:
    if task is None:
        return ""
    if not isinstance(task, Task):
        raise BatchError(f"{name} must be a task, not {task!r}.")
    if task.backend != alias:
        raise BatchError(
            f"{name} {task.module_path} uses backend {task.backend!r}, not the batch's {alias!r}."
        )
    try:
        registry.check_enqueue(task)
    except InvalidTask as exc:
        raise BatchError(f"{name} {task.module_path} cannot run: {exc}") from exc
    return str(task.module_path)


def _check(description: object, properties: object) -> None:
    if not isinstance(description, str) or len(description) > DESCRIPTION_MAX_LENGTH:
        raise BatchError(
            f"description must be a string of at most {DESCRIPTION_MAX_LENGTH} characters."
        )
    if properties is not None:
        if not isinstance(properties, Mapping):
            raise BatchError(f"properties must be a mapping, not {properties!r}.")
        try:
            json.dumps(dict(properties))
        except (TypeError, ValueError) as exc:
            raise BatchError(f"properties must be JSON: {exc}") from exc
