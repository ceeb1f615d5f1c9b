"""Running one claimed job and finalizing it exactly once."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError
from django.utils import timezone

from .. import conf
from ..arguments import TAG, decode_arguments, storable_return_value
from ..compat import Task, TaskContext, TaskResult, TaskResultStatus, task_finished, task_started
from ..exceptions import DeserializationError, ReturnValueError, Snooze
from ..models.error_record import error_record
from ..options import retries
from ..options.encryption import ENCRYPTED
from ..options.registry import rebuild_task
from ..options.sealing import seal, unseal
from . import attempt_log, enqueue_metadata, job_logs, progress, rate_gate, tracing
from .endings import Defer, Ending, failed, finalize, snoozed, succeeded
from .finalizing import Finalized
from .results import build_result, task_errors

if TYPE_CHECKING:
    from ..models import ClaimedExecution, Job, NextClaim

logger = logging.getLogger(__name__)

_ARGUMENTS_SHAPE = "{'args': [...], 'kwargs': {...}}"


@dataclass(frozen=True, slots=True)
class Body:
    """A job's call of its task, with its parts: a guard can run an
    ``async def`` task in an event loop it can cancel."""

    task: Task[..., Any]
    args: list[Any]
    kwargs: dict[str, Any]

    def __call__(self) -> Any:
        return self.task.call(*self.args, **self.kwargs)


# Runs a job's body: (claim, task, body) -> the body's value.
Guard = Callable[["ClaimedExecution", "Task[..., Any]", Body], Any]
# Writes a success together with other threads' (a worker's Finisher):
# (claim, the value as stored) -> how it was written, once it was; None:
# not written, the thread writes it itself (it may have been: in doubt).
HandOff = Callable[["ClaimedExecution", Any], "Finalized | None"]


def perform(
    claimed: ClaimedExecution,
    on_outcome: Callable[[], None] | None = None,
    guard: Guard | None = None,
    on_recorded: Callable[[], None] | None = None,
    then: Callable[[], NextClaim | None] | None = None,
    defer: Defer | None = None,
    hand_off: HandOff | None = None,
) -> bool:
    """Run ``claimed``'s task; True if this call finalized the job or
    handed its finalize on (False also when a rate-limited job goes back
    in line, ``rate_gate.py``).

    ``on_outcome`` is called once the outcome is known (the body ran, or
    cannot run), before it is written: from then on the job must never go
    back to ready. ``on_recorded`` is called once it is written (or the
    claim was found gone): nothing is left to keep claimed. ``guard`` runs
    the body (a worker's watchdog: time limits, cancellation). ``then``:
    asked once the body succeeded, what to claim for the thread's next job
    with the same commit (``NextClaim``); not asked on any other outcome.
    ``defer``: where a finalize that keeps failing goes (``Defer``), so
    this thread is free; without it the write is retried here.
    ``hand_off``: writes a success with other threads' (``HandOff``);
    what follows the write still happens here.
    """
    job = claimed.job
    on_outcome, on_recorded = on_outcome or _nothing, on_recorded or _nothing
    if job.rate_key and not rate_gate.may_start(claimed):
        on_recorded()
        return False
    attempt = tracing.attempt(job)  # an attempt_log.Attempt, with a span when tracing
    attempt.started()
    try:
        task = rebuild_task(job)
        _check_arguments_shape(job)
        result = _running_result(task, job)
    except Exception as exc:  # noqa: BLE001 - every failure is recorded
        logger.error("Job %s cannot run: %s", job.result_id, exc)
        on_outcome()
        ending = failed(claimed, error_record(exc), None)

        def cannot_run(finalized: Finalized) -> None:
            on_recorded()
            attempt.finished(_outcome(finalized, attempt_log.FAILED), ending.error)

        return finalize(claimed, ending.record, cannot_run, (defer, ending.did))
    guard = tracing.guarded(attempt, guard or _unguarded)
    return _perform_task(
        claimed, task, result, (on_outcome, on_recorded, attempt), guard, then, (defer, hand_off)
    )


def _outcome(finalized: Finalized, outcome: str) -> str:
    if finalized is Finalized.SKIPPED:
        return attempt_log.SKIPPED
    return attempt_log.FAILED if finalized is Finalized.REPLACED else outcome


def _running_result(task: Task[..., Any], job: Job) -> TaskResult[Any]:
    """The RUNNING result the body and the signals see.

    The stored (JSON) arguments for now; _run() decodes them once, inside
    the failure boundary, and puts the real values on the result. Raises
    ``DeserializationError`` if the row cannot be read back (a hand-edited
    column): the job fails instead of staying claimed.
    """
    try:
        return build_result(
            task, job, status=TaskResultStatus.RUNNING, shown=(job.args, job.kwargs)
        )
    except Exception as exc:
        raise DeserializationError(
            f"Job {job.result_id}'s stored row cannot be read back: {exc!r}"
        ) from exc


def _perform_task(
    claimed: ClaimedExecution,
    task: Task[..., Any],
    result: TaskResult[Any],
    hooks: tuple[Callable[[], None], Callable[[], None], attempt_log.Attempt],
    guard: Guard,
    then: Callable[[], NextClaim | None] | None,
    handoffs: tuple[Defer | None, HandOff | None],
) -> bool:
    """Run the body, record its outcome and send ``task_finished``.

    ``hooks``: perform()'s (on_outcome, on_recorded) and the attempt (its
    outcome is logged once recorded); ``handoffs``: its (defer, hand_off).
    Returns what ``_finalize`` returns.
    """
    on_outcome, on_recorded, attempt = hooks
    defer, hand_off = handoffs
    sender = type(task.get_backend())

    def followed_by(ending: Ending) -> Callable[[Finalized], None]:
        def followed(finalized: Finalized) -> None:
            on_recorded()
            _settle_as(result, finalized, ending, claimed)
            _finished(finalized, sender, result)
            attempt.finished(_outcome(finalized, ending.outcome), ending.error)

        return followed

    def finish(ending: Ending, in_doubt: bool = False) -> bool:
        followed = followed_by(ending)
        return finalize(claimed, ending.record, followed, (defer, ending.did), in_doubt)

    try:
        value = _run(claimed, task, result, guard)
        # One attribute read for a task that is not @encrypted.
        stored = value if getattr(task, "encrypted", None) is None else _stored(task, value)
    except Snooze as snooze:
        on_outcome()
        return finish(snoozed(claimed, snooze.delay))
    except BaseException as exc:  # noqa: BLE001 - every failure is recorded
        on_outcome()
        # Inside the except: task_finished for a failure is sent while the
        # exception is being handled (DEP 0014), so a receiver can log it.
        # A write handed to the retrier sends it later, from its thread.
        return finish(failed(claimed, error_record(exc), _retry_in(task, claimed.job, exc)))
    on_outcome()
    ending = succeeded(claimed, stored, then() if then is not None else None)
    ending = ending if stored is value else replace(ending, value=value)
    if hand_off is None:
        return finish(ending)
    written = hand_off(claimed, stored)
    if written is None:
        return finish(ending, in_doubt=True)
    followed_by(ending)(written)
    return written is not Finalized.SKIPPED


def _settle_as(
    result: TaskResult[Any], finalized: Finalized, ending: Ending, claimed: ClaimedExecution
) -> None:
    if finalized is Finalized.REPLACED or ending.status is TaskResultStatus.FAILED:
        _settle(result, TaskResultStatus.FAILED, errors=claimed.job.errors)
    elif ending.status is TaskResultStatus.SUCCESSFUL:
        _settle(result, TaskResultStatus.SUCCESSFUL, return_value=ending.value)
    else:
        # Waiting again: task_finished still closes what task_started
        # opened (a trace span), with the job's real status.
        object.__setattr__(result, "status", TaskResultStatus.READY)


def _finished(finalized: Finalized, sender: type[Any], result: TaskResult[Any]) -> None:
    """``task_finished`` to every receiver. The outcome is recorded: one
    that raises is logged as such and does not keep the others from it.

    A skipped outcome is not the job's: its claim was gone (the process
    was pruned, or a stuck thread's watchdog recorded it long ago).
    """
    if finalized is Finalized.SKIPPED:
        return
    for receiver, response in task_finished.send_robust(sender=sender, task_result=result):
        if isinstance(response, Exception):
            logger.error(
                "A task_finished receiver (%s) raised for job %s; its outcome is recorded: %r",
                getattr(receiver, "__qualname__", receiver),
                result.id,
                response,
                exc_info=response,
            )


def _run(
    claimed: ClaimedExecution, task: Task[..., Any], result: TaskResult[Any], guard: Guard
) -> Any:
    args, kwargs = _decode_arguments(claimed)
    object.__setattr__(result, "args", args)
    object.__setattr__(result, "kwargs", kwargs)
    if task.takes_context:
        args = [TaskContext(task_result=result), *args]
    with (
        enqueue_metadata.running(result.id, claimed.job.metadata),
        progress.reporting(claimed, result.id),
    ):
        task_started.send(sender=type(task.get_backend()), task_result=result)
        # The job's own log: what the body logs, not the signal's receivers.
        with job_logs.capturing(claimed, task):
            value = guard(claimed, task, Body(task, list(args), kwargs))
    limit = conf.max_return_value_bytes(claimed.job.backend_alias)
    try:
        return storable_return_value(value, max_bytes=limit)
    except ReturnValueError as exc:
        raise ReturnValueError(
            f"Task {task.module_path} returned a value that cannot be stored: {exc}"
        ) from exc


def _check_arguments_shape(job: Job) -> None:
    """Raise ``DeserializationError`` unless the stored arguments column
    holds ``{'args': [...], 'kwargs': {...}}`` (it may be hand-edited)."""
    data = job.arguments
    if not (
        isinstance(data, Mapping)
        and isinstance(data.get("args", []), list)
        and isinstance(data.get("kwargs", {}), Mapping)
    ):
        raise DeserializationError(
            f"Job {job.result_id}'s stored arguments are not {_ARGUMENTS_SHAPE}: "
            f"{str(data)[:200]!r}"
        )


def _decode_arguments(claimed: ClaimedExecution) -> tuple[list[Any], dict[str, Any]]:
    """The task's real arguments; ``DeserializationError`` if they cannot
    be rebuilt (a database error stays what it is)."""
    job = claimed.job
    stored = job.arguments
    if TAG in stored:
        # Sealed (@encrypted): a plain row holds 'args' and 'kwargs' only.
        # No key, no run: EncryptionError fails the job before its body.
        stored = unseal(stored, f"job {job.result_id}'s arguments")
    try:
        return decode_arguments(stored, using=claimed._state.db)
    except (DeserializationError, DatabaseError):
        raise
    except Exception as exc:
        raise DeserializationError(
            f"Job {job.result_id}'s arguments cannot be decoded: {exc!r}"
        ) from exc


def _stored(task: Task[..., Any], value: Any) -> Any:
    """The return value as its job row keeps it: sealed for a task that
    is ``@encrypted(result=True)`` (the keys opened its arguments)."""
    encryption = ENCRYPTED.of(task)
    if encryption is None or not encryption.result:
        return value
    return seal(value, f"the return value of task {task.module_path}")


def _retry_in(task: Task[..., Any], job: Job, exc: BaseException) -> timedelta | None:
    # The task in hand carries its policy: no second look-up. Never
    # raises: a policy that cannot decide is logged there, not retried.
    return retries.retry_in(task, exc, attempt=job.retry_attempt, job=job.result_id)


def _settle(result: TaskResult[Any], status: TaskResultStatus, **changes: Any) -> None:
    object.__setattr__(result, "status", status)
    object.__setattr__(result, "finished_at", timezone.now())
    if "return_value" in changes:
        object.__setattr__(result, "_return_value", changes["return_value"])
    if "errors" in changes:
        object.__setattr__(result, "errors", task_errors(changes["errors"]))


def _nothing() -> None:
    pass


def _unguarded(claimed: ClaimedExecution, task: Task[..., Any], body: Body) -> Any:
    return body()
