"""Running one claimed job and finalizing it exactly once."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError, InterfaceError, OperationalError, connections
from django.utils import timezone

from . import retries
from .arguments import decode_arguments, normalize_return_value
from .compat import (
    Task,
    TaskContext,
    TaskResult,
    TaskResultStatus,
    task_finished,
    task_started,
)
from .exceptions import ReturnValueError, UnknownTaskError
from .models.failed_execution import error_record
from .registry import resolve_task
from .results import build_result, task_errors

if TYPE_CHECKING:
    from .models import ClaimedExecution

logger = logging.getLogger(__name__)

FINALIZE_ATTEMPTS = 5
FINALIZE_BACKOFF = 0.2


def perform(claimed: ClaimedExecution) -> bool:
    """Run ``claimed``'s task; True if this call finalized the job."""
    job = claimed.job
    try:
        task = resolve_task(job.task_path, job.backend_alias)
    except UnknownTaskError as exc:
        logger.error("Job %s cannot run: %s", job.result_id, exc)
        unknown = error_record(exc)
        return _finalize(claimed, lambda: claimed.fail(unknown))
    # The stored (JSON) arguments for now; _run() decodes them once, inside
    # the failure boundary, and puts the real values on the result.
    result = build_result(
        task, job, status=TaskResultStatus.RUNNING, args=job.args, kwargs=job.kwargs
    )
    sender = type(task.get_backend())
    try:
        value = _run(claimed, task, result)
    except BaseException as exc:  # noqa: BLE001 - every failure is recorded
        error = error_record(exc)
        retry_at = retries.retry_at(task, exc, attempt=len(job.worker_ids))
        finalized = _finalize(claimed, lambda: claimed.fail(error, retry_at))
        _settle(result, TaskResultStatus.FAILED, errors=claimed.job.errors)
        task_finished.send(sender=sender, task_result=result)
        return finalized
    finalized = _finalize(claimed, lambda: claimed.finish(value))
    _settle(result, TaskResultStatus.SUCCESSFUL, return_value=value)
    task_finished.send(sender=sender, task_result=result)
    return finalized


def _run(claimed: ClaimedExecution, task: Task, result: TaskResult) -> Any:
    args, kwargs = decode_arguments(claimed.job.arguments, using=claimed._state.db)
    object.__setattr__(result, "args", args)
    object.__setattr__(result, "kwargs", kwargs)
    task_started.send(sender=type(task.get_backend()), task_result=result)
    if task.takes_context:
        value = task.call(TaskContext(task_result=result), *args, **kwargs)
    else:
        value = task.call(*args, **kwargs)
    try:
        return normalize_return_value(value)
    except TypeError as exc:
        raise ReturnValueError(
            f"Task {task.module_path} returned a value that is not JSON: {exc}"
        ) from exc


def _settle(result: TaskResult, status: TaskResultStatus, **changes: Any) -> None:
    object.__setattr__(result, "status", status)
    object.__setattr__(result, "finished_at", timezone.now())
    if "return_value" in changes:
        object.__setattr__(result, "_return_value", changes["return_value"])
    if "errors" in changes:
        object.__setattr__(result, "errors", task_errors(changes["errors"]))


def _finalize(claimed: ClaimedExecution, step: Callable[[], bool]) -> bool:
    """Run a finalize step, retrying transient database errors.

    A claim must not be stranded while its worker lives, so a broken
    connection is replaced and the step tried again.
    """
    using = claimed._state.db or "default"
    for attempt in range(1, FINALIZE_ATTEMPTS + 1):
        try:
            return step()
        except (OperationalError, InterfaceError) as exc:
            if attempt == FINALIZE_ATTEMPTS:
                raise
            logger.warning(
                "Finalizing job %s failed (%s); retrying", claimed.job_id, exc
            )
            _reset_connection(using)
            time.sleep(FINALIZE_BACKOFF * attempt)
    raise DatabaseError("unreachable")  # pragma: no cover


def _reset_connection(using: str) -> None:
    # The next query opens a fresh connection.
    connection = connections[using]
    if not connection.in_atomic_block:
        connection.close()
