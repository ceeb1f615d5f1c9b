"""Job metadata: a JSON dict set at enqueue that travels to the run.

Set it around an enqueue with ``job_metadata({...})``, or for every job
with an ``@on_enqueue`` hook; read it in the task with
``metadata(context)``. Trace ids are the use: the enqueuing request's
trace goes on with the job.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from .. import conf
from ..compat import Task, TaskContext, TaskResult
from ..exceptions import EnqueueError, PayloadTooLargeError

# Metadata is for ids and flags, not data: arguments are for data.
MAX_METADATA_BYTES = 8192

# A string: Django 6.x's Task cannot be subscripted at runtime.
EnqueueHook = Callable[["Task[..., Any]"], Mapping[str, Any] | None]

_CURRENT: ContextVar[dict[str, Any] | None] = ContextVar("robust_queue_job_metadata", default=None)
_HOOKS: list[EnqueueHook] = []
# Result id -> metadata of the jobs running in this process.
_RUNNING: dict[str, dict[str, Any]] = {}


@contextmanager
def job_metadata(values: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Attach ``values`` to every job enqueued inside the block.

    Blocks nest: an inner block's keys are added to (and win over) the
    outer one's. Bad values raise here, before anything is enqueued.
    """
    merged = {**(_CURRENT.get() or {}), **_checked(values, "job_metadata()")}
    _checked(merged, "job_metadata()")
    token = _CURRENT.set(merged)
    try:
        yield dict(merged)
    finally:
        _CURRENT.reset(token)


def on_enqueue(hook: EnqueueHook) -> EnqueueHook:
    """Register ``hook(task) -> dict | None``, called at every enqueue.

    What it returns is added to the job's metadata; keys set with
    ``job_metadata()`` win over it.
    """
    if not callable(hook):
        raise TypeError(f"@on_enqueue needs a callable, not {hook!r}.")
    _HOOKS.append(hook)
    return hook


def for_enqueue(task: Task[..., Any]) -> dict[str, Any]:
    """The metadata of a job of ``task`` being enqueued now."""
    current = _CURRENT.get()
    if current is None and not _HOOKS:
        return {}
    merged: dict[str, Any] = {}
    for hook in _HOOKS:
        what = f"@on_enqueue hook {getattr(hook, '__qualname__', hook)!r}"
        try:
            extra = hook(task)
        except Exception as exc:
            raise EnqueueError(f"{what} failed for {task.module_path}: {exc!r}") from exc
        if extra:
            merged.update(_checked(extra, what))
    merged.update(current or {})
    return _checked(merged, f"Metadata of task {task.module_path}") if merged else merged


def _checked(values: Any, what: str) -> dict[str, Any]:
    """``values`` as plain JSON, or ``TypeError`` / ``PayloadTooLargeError``
    naming the problem."""
    if not isinstance(values, Mapping):
        raise TypeError(f"{what}: metadata must be a dict, not {type(values).__name__}.")
    for key in values:
        if not isinstance(key, str):
            raise TypeError(f"{what}: metadata keys must be strings, not {key!r}.")
    try:
        text = json.dumps(values, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what}: metadata must be JSON-serialisable: {exc}") from exc
    size = len(text.encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise PayloadTooLargeError(
            f"{what}: metadata is {size} bytes encoded; the limit is {MAX_METADATA_BYTES} bytes."
        )
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def metadata(context: TaskContext | TaskResult[Any]) -> dict[str, Any]:
    """The metadata of a job, from its task's ``TaskContext`` (or a
    ``TaskResult``, as ``task_started`` receivers get).

    Inside a worker this reads memory; elsewhere it asks the database. A
    result whose job is not stored has none: ``{}``.
    """
    result = getattr(context, "task_result", context)
    if not isinstance(result, TaskResult):
        raise TypeError(
            f"metadata() takes a TaskContext or a TaskResult, not {type(context).__name__}."
        )
    running = _RUNNING.get(result.id)
    if running is not None:
        return dict(running)
    from ..models import Job  # noqa: PLC0415 - the app registry must be ready

    jobs = Job.objects.using(conf.database_for(result.backend))
    stored = jobs.filter(result_id=result.id).values_list("metadata", flat=True).first()
    return dict(stored) if isinstance(stored, dict) else {}


@contextmanager
def running(result_id: str, values: Any) -> Iterator[None]:
    """Make ``values`` the metadata of the running job ``result_id``."""
    _RUNNING[result_id] = values if isinstance(values, dict) else {}
    try:
        yield
    finally:
        _RUNNING.pop(result_id, None)
