"""Building Django ``TaskResult`` objects from job rows."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from datetime import datetime
from typing import Any, NoReturn

from ..arguments import Shown, decode_arguments
from ..compat import Task, TaskError, TaskResult, TaskResultStatus
from ..exceptions import DiscardedOnConflictError, UnknownTaskError
from ..models import Job, JobState
from ..models.attempt_history import stored_worker_ids
from ..options import registry
from ..options.encryption import ENCRYPTED
from ..options.sealing import is_sealed, unseal

STATUS_BY_STATE = {
    JobState.READY: TaskResultStatus.READY,
    JobState.SCHEDULED: TaskResultStatus.READY,
    JobState.BLOCKED: TaskResultStatus.READY,
    JobState.CLAIMED: TaskResultStatus.RUNNING,
    JobState.FINISHED: TaskResultStatus.SUCCESSFUL,
    JobState.FAILED: TaskResultStatus.FAILED,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class RobustQueueTaskResult(TaskResult):  # type: ignore[type-arg]
    """Django's ``TaskResult``, plus whether an enqueue wrote nothing.

    ``is_duplicate`` is True for the result an enqueue returned instead of
    writing a job: a ``@unique`` task whose key was taken or an
    ``enqueue_once`` key already used. The result is then the existing
    job's (its id, its state), as Oban's ``conflict?`` says. Not compared:
    the same job's result equals itself however it was obtained.
    """

    is_duplicate: bool = field(default=False, compare=False)


def as_duplicate(result: TaskResult[Any]) -> TaskResult[Any]:
    """``result`` marked as standing for a job that was not written."""
    object.__setattr__(result, "is_duplicate", True)
    return result


def build_result(
    task: Task[..., Any],
    job: Job,
    *,
    status: TaskResultStatus | None = None,
    shown: Shown | None = None,
) -> TaskResult[Any]:
    """The ``TaskResult`` of ``job``; ``status`` overrides the stored state.

    ``shown`` (args, kwargs) defaults to the stored arguments decoded for
    display (model instances stay references, nothing is fetched).
    """
    args, kwargs = shown if shown is not None else _display_arguments(job)
    status = status or STATUS_BY_STATE[job.state]
    result: TaskResult[Any] = RobustQueueTaskResult(
        task=task,
        id=job.result_id,
        status=status,
        enqueued_at=job.enqueued_at,
        started_at=job.started_at,
        finished_at=_finished_at(job, status),
        last_attempted_at=job.last_attempted_at,
        # Django normalises these as JSON: empty ones, for nothing; the
        # real values are set below.
        args=[],
        kwargs={},
        backend=job.backend_alias,
        errors=task_errors(job.errors),
        worker_ids=[str(worker) for worker in stored_worker_ids(job.worker_ids)],
    )
    object.__setattr__(result, "args", args)
    object.__setattr__(result, "kwargs", kwargs)
    if status == TaskResultStatus.SUCCESSFUL:
        object.__setattr__(result, "_return_value", _return_value(task, job))
    return result


def _return_value(task: Task[..., Any], job: Job) -> Any:
    # Sealed by a task that is @encrypted(result=True); a plain value of
    # another task may look the same and is shown as it is.
    value = job.return_value
    if is_sealed(value) and ENCRYPTED.of(task) is not None:
        return unseal(value, f"job {job.result_id}'s return value")
    return value


def build_discarded_result(task: Task[..., Any], job: Job, shown: Shown) -> TaskResult[Any]:
    """The FAILED result of a job a concurrency limit discarded at enqueue.

    Nothing of the job is stored: ``get_result()`` of its id raises
    ``TaskResultDoesNotExist``. Its one error says why.
    """
    error = DiscardedOnConflictError(
        f"Job {job.result_id} of task {job.task_path} was discarded at enqueue: "
        f"concurrency key {job.concurrency_key!r} was at its limit and the limit "
        "says on_conflict='discard'. Nothing was stored."
    )
    # Built as READY: nothing is read back for a job that is not stored.
    result = build_result(task, job, status=TaskResultStatus.READY, shown=shown)
    reason = TaskError(
        exception_class_path=f"{type(error).__module__}.{type(error).__qualname__}",
        traceback="".join(traceback.format_exception_only(type(error), error)),
    )
    object.__setattr__(result, "status", TaskResultStatus.FAILED)
    object.__setattr__(result, "finished_at", job.enqueued_at)
    object.__setattr__(result, "errors", [reason])
    return result


def _display_arguments(job: Job) -> tuple[list[Any], dict[str, Any]]:
    # A hand-edited or malformed arguments column must not make the result
    # unreadable: the job's own run fails it with DeserializationError, and
    # the result shows the stored values as they are.
    stored = job.arguments
    if is_sealed(stored):
        # @encrypted: opened with this process's keys, or EncryptionError.
        stored = unseal(stored, f"job {job.result_id}'s arguments")
    well_formed = (
        isinstance(stored, dict)
        and isinstance(stored.get("args", []), list)
        and isinstance(stored.get("kwargs", {}), dict)
    )
    try:
        if well_formed:
            return decode_arguments(stored, fetch_models=False)
    except Exception:  # noqa: BLE001, S110 - any malformed payload
        pass
    return job.args, job.kwargs


def build_unrunnable_result(job: Job, error: UnknownTaskError) -> TaskResult[Any]:
    """The ``TaskResult`` of a job whose task cannot be resolved: its real
    state, plus a last error that says why it cannot run.

    ``result.task`` carries the job's path, backend, queue and priority;
    calling it raises ``UnknownTaskError`` unless the path still names a
    declared task.
    """
    result = build_result(_stand_in(job, error), job)
    reason = TaskError(
        exception_class_path=f"{type(error).__module__}.{type(error).__qualname__}",
        traceback="".join(traceback.format_exception_only(type(error), error)),
    )
    object.__setattr__(result, "errors", [*result.errors, reason])
    return result


def _stand_in(job: Job, error: UnknownTaskError) -> Task[..., Any]:
    # Built without validation (no backend's validate_task, no registry):
    # the row's values may be ones no backend accepts today. A path that
    # is still declared keeps its function, so Task.get_result() matches.
    declared = registry.declared(job.task_path)
    cls: type[Task[..., Any]] = Task
    if declared is None:
        values = {f.name: f.default for f in fields(Task) if f.default is not MISSING}
        values["func"] = _unrunnable(job.task_path, str(error))
    else:
        # Its own class and every field: a RobustQueueTask's options
        # (retry, concurrency limit, ...) are part of the task as declared.
        cls = type(declared)
        values = {f.name: getattr(declared, f.name) for f in fields(declared)}
    values.update(
        backend=job.backend_alias,
        queue_name=job.queue_name,
        priority=job.priority,
        run_after=job.run_after,
    )
    task: Task[..., Any] = object.__new__(cls)
    for name, value in values.items():
        object.__setattr__(task, name, value)
    return task


def _unrunnable(task_path: str, reason: str) -> Callable[..., NoReturn]:
    def unrunnable(*args: Any, **kwargs: Any) -> NoReturn:
        raise UnknownTaskError(reason)

    # module_path reads the job's path.
    module, _, name = task_path.rpartition(".")
    unrunnable.__module__ = module
    unrunnable.__qualname__ = unrunnable.__name__ = name
    return unrunnable


def _finished_at(job: Job, status: TaskResultStatus) -> datetime | None:
    if job.finished_at is not None:
        return job.finished_at
    if status == TaskResultStatus.FAILED and hasattr(job, "failed_execution"):
        return job.failed_execution.created_at
    return None


def task_errors(records: Any) -> list[TaskError]:
    """Django ``TaskError`` objects from stored error records, in order.

    The column may have been edited by hand: a value that is not a record
    is shown as it is, never an error that keeps the result from loading.
    """
    if records is None:
        return []
    if not isinstance(records, list):
        return [TaskError(exception_class_path="", traceback=f"(not a list) {records!r}")]
    return [_task_error(record) for record in records]


def _task_error(record: Any) -> TaskError:
    if not isinstance(record, dict):
        return TaskError(exception_class_path="", traceback=f"(not an error record) {record!r}")
    return TaskError(
        exception_class_path=str(record.get("exception_class_path", "")),
        traceback=str(record.get("traceback", "")),
    )
