"""Building Django ``TaskResult`` objects from job rows."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .arguments import decode_arguments
from .compat import Task, TaskError, TaskResult, TaskResultStatus
from .models import Job, JobState

STATUS_BY_STATE = {
    JobState.READY: TaskResultStatus.READY,
    JobState.SCHEDULED: TaskResultStatus.READY,
    JobState.BLOCKED: TaskResultStatus.READY,
    JobState.CLAIMED: TaskResultStatus.RUNNING,
    JobState.FINISHED: TaskResultStatus.SUCCESSFUL,
    JobState.FAILED: TaskResultStatus.FAILED,
}


def build_result(
    task: Task,
    job: Job,
    *,
    status: TaskResultStatus | None = None,
    args: list[Any] | None = None,
    kwargs: dict[str, Any] | None = None,
) -> TaskResult:
    """The ``TaskResult`` of ``job``; ``status`` overrides the stored state.

    ``args``/``kwargs`` default to the stored arguments decoded for display
    (model instances stay references, nothing is fetched).
    """
    if args is None or kwargs is None:
        args, kwargs = decode_arguments(job.arguments, fetch_models=False)
    status = status or STATUS_BY_STATE[job.state]
    result: TaskResult = TaskResult(
        task=task,
        id=job.result_id,
        status=status,
        enqueued_at=job.enqueued_at,
        started_at=job.started_at,
        finished_at=_finished_at(job, status),
        last_attempted_at=job.last_attempted_at,
        # Django normalises these as JSON; real values are set below.
        args=job.args,
        kwargs=job.kwargs,
        backend=job.backend_alias,
        errors=task_errors(job.errors),
        worker_ids=list(job.worker_ids),
    )
    object.__setattr__(result, "args", args)
    object.__setattr__(result, "kwargs", kwargs)
    if status == TaskResultStatus.SUCCESSFUL:
        object.__setattr__(result, "_return_value", job.return_value)
    return result


def _finished_at(job: Job, status: TaskResultStatus) -> datetime | None:
    if job.finished_at is not None:
        return job.finished_at
    if status == TaskResultStatus.FAILED and hasattr(job, "failed_execution"):
        return job.failed_execution.created_at
    return None


def task_errors(records: list[dict[str, str]]) -> list[TaskError]:
    """Django ``TaskError`` objects from stored error records, in order."""
    return [
        TaskError(
            exception_class_path=record.get("exception_class_path", ""),
            traceback=record.get("traceback", ""),
        )
        for record in records
    ]
