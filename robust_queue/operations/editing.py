"""Editing a waiting job: ``edit_job(result_id, priority=..., ...)``.

A job that has not started (ready, scheduled or blocked) gets new
arguments, priority, queue, due time or tags; each field left out is
kept. Every value is checked as at enqueue before anything is written
(arguments encoded by the same codec, under the same size limit; queue
and priority by the task's backend; an aware ``run_after``; tags by the
tags' rule), so a bad one raises and leaves the job as it was. The write
is one transaction that locks the job's execution row
(``models/editing.py``): a worker's claim and the edit never interleave,
and a job claimed first is refused with ``NotEditableError``.

The new arguments of an ``@encrypted`` task are sealed as enqueue seals
them (the part not given is opened, merged and sealed again).

Keys made from the arguments (a concurrency limit's, a rate limit's, a
``@unique`` key) are computed again from the new arguments: the edit is
refused with ``NotEditableError`` if any would change, since the job's
slot, its place in the rate window and its unique claim belong to the old
key. Cancel the job and enqueue a new one instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from asgiref.sync import sync_to_async

from .. import conf
from ..arguments import decode_arguments, encode_arguments, encoded_size
from ..compat import (
    DEFAULT_TASK_BACKEND_ALIAS,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    task_backends,
)
from ..exceptions import NotEditableError, PayloadTooLargeError, UnknownTaskError
from ..models import Job, UniqueKey
from ..models.editing import Changes, edit_waiting
from ..models.job import RESULT_ID_MAX_LENGTH
from ..models.rescheduling import checked_time
from ..options import concurrency, rate_limits
from ..options.encryption import ENCRYPTED
from ..options.sealing import is_sealed, seal, unseal
from ..options.tagging import tag_problems
from ..options.unique_claims import claim_for
from ..options.uniqueness import UNIQUE
from ..options.validation import check_priority, check_queue_name

__all__ = ["aedit_job", "edit_job"]


class _Unchanged:
    def __repr__(self) -> str:
        return "<unchanged>"


# The default of every field: leave it as it is.
UNCHANGED: Any = _Unchanged()


def edit_job(
    result_id: str,
    *,
    args: Sequence[Any] = UNCHANGED,
    kwargs: Mapping[str, Any] = UNCHANGED,
    priority: int = UNCHANGED,
    queue_name: str = UNCHANGED,
    run_after: Any = UNCHANGED,
    tags: Iterable[str] = UNCHANGED,
    backend: str = DEFAULT_TASK_BACKEND_ALIAS,
) -> TaskResult[Any]:
    """Change the waiting job of ``result_id``; return its ``TaskResult``.

    ``run_after`` is an aware datetime, a timedelta from now by the
    database's clock, or None (due now); ``tags`` replace the job's tags.
    Raises ``TypeError``/``ValueError``/``InvalidTask`` for a bad value,
    ``TaskResultDoesNotExist`` for an unknown id and ``NotEditableError``
    for a job that is running or has ended, or whose keys would change.
    """
    given = {
        name: value
        for name, value in (
            ("args", args),
            ("kwargs", kwargs),
            ("priority", priority),
            ("queue_name", queue_name),
            ("run_after", run_after),
            ("tags", tags),
        )
        if value is not UNCHANGED
    }
    job = _job_of(result_id, backend)
    edit_waiting(job, checked_changes(job, given))
    return task_backends[job.backend_alias].get_result(job.result_id)


async def aedit_job(result_id: str, **changes: Any) -> TaskResult[Any]:
    """The async twin of ``edit_job``."""
    return await sync_to_async(edit_job)(result_id, **changes)


def checked_changes(job: Job, given: Mapping[str, Any]) -> Changes:
    """``given`` (new values by ``edit_job``'s keyword) checked for
    ``job``; raises naming the first problem."""
    if not given:
        raise ValueError(
            "edit_job() was given nothing to change: name one or more of args, "
            "kwargs, priority, queue_name, run_after and tags."
        )
    task = job.declared_task()
    values: dict[str, Any] = {}
    if "priority" in given or "queue_name" in given:
        values.update(_checked_names(job, task, given))
    if "run_after" in given:
        at = given["run_after"]
        values["run_after"] = None if at is None else checked_time(at, "edit_job(run_after=...)")
    if "args" in given or "kwargs" in given:
        values["arguments"] = _checked_arguments(job, task, given)
    tags = _checked_tags(given["tags"]) if "tags" in given else None
    return Changes(values=values, tags=tags)


def _job_of(result_id: str, backend: str) -> Job:
    if isinstance(result_id, str) and 0 < len(result_id) <= RESULT_ID_MAX_LENGTH:
        jobs = Job.objects.using(conf.database_for(backend))
        job = jobs.filter(result_id=result_id).first()
        if job is not None:
            return job
    raise TaskResultDoesNotExist(f"No job has the result id {result_id!r}.")


def _checked_names(
    job: Job, task: Task[..., Any] | None, given: Mapping[str, Any]
) -> dict[str, Any]:
    """The new queue and priority, checked as enqueue checks them: the
    names' rules, then the task's backend (its ``QUEUES``)."""
    queue_name = given.get("queue_name", job.queue_name)
    priority = given.get("priority", job.priority)
    check_queue_name(queue_name)
    check_priority(priority)
    if task is not None:
        task.using(queue_name=queue_name, priority=int(priority))
    names = {"queue_name": queue_name, "priority": int(priority)}
    return {name: value for name, value in names.items() if name in given}


def _checked_arguments(
    job: Job, task: Task[..., Any] | None, given: Mapping[str, Any]
) -> dict[str, Any]:
    """The new arguments encoded, the part not given kept as stored."""
    args, kwargs = given.get("args", UNCHANGED), given.get("kwargs", UNCHANGED)
    if args is not UNCHANGED and (isinstance(args, (str, bytes)) or not isinstance(args, Sequence)):
        raise TypeError(f"edit_job(args=...) takes a list or tuple, not {args!r}.")
    if kwargs is not UNCHANGED and not isinstance(kwargs, Mapping):
        raise TypeError(f"edit_job(kwargs=...) takes a dict, not {kwargs!r}.")
    encoded = encode_arguments(
        () if args is UNCHANGED else args, {} if kwargs is UNCHANGED else kwargs
    )
    stored = _stored(job) if UNCHANGED in (args, kwargs) else encoded
    arguments = {
        "args": stored["args"] if args is UNCHANGED else encoded["args"],
        "kwargs": stored["kwargs"] if kwargs is UNCHANGED else encoded["kwargs"],
    }
    size, limit = encoded_size(arguments), conf.max_payload_bytes(job.backend_alias)
    if size > limit:
        raise PayloadTooLargeError(
            f"The new arguments of job {job.result_id} are {size} bytes encoded; "
            f"the limit is {limit} bytes (OPTIONS['max_payload_bytes'])."
        )
    if task is None:
        raise UnknownTaskError(
            f"Job {job.result_id} names {job.task_path!r}, no declared task of backend "
            f"{job.backend_alias!r}: its new arguments cannot be checked."
        )
    _check_keys(job, task, args, kwargs, arguments)
    if ENCRYPTED.of(task) is not None or is_sealed(job.arguments):
        # As at enqueue: every key is made from the plaintext, then sealed.
        return seal(arguments, f"the arguments of task {task.module_path}")
    return arguments


def _stored(job: Job) -> dict[str, Any]:
    """The job's stored arguments, opened if sealed (``@encrypted``):
    ``{"args": [...], "kwargs": {...}}``, ``[]``/``{}`` where malformed."""
    stored = job.arguments
    if is_sealed(stored):
        stored = unseal(stored, f"the arguments of job {job.result_id}")
    args = stored.get("args") if isinstance(stored, dict) else None
    kwargs = stored.get("kwargs") if isinstance(stored, dict) else None
    return {
        "args": args if isinstance(args, list) else [],
        "kwargs": kwargs if isinstance(kwargs, dict) else {},
    }


def _check_keys(
    job: Job, task: Task[..., Any], args: Any, kwargs: Any, arguments: Mapping[str, Any]
) -> None:
    """Refuse new arguments that change a key the job holds."""
    limit = concurrency.limit_for(task) if job.concurrency_key else None
    rate = rate_limits.limit_for(task) if job.rate_key else None
    unique = UNIQUE.of(task)
    if limit is None and rate is None and unique is None:
        return
    if args is UNCHANGED or kwargs is UNCHANGED:
        # The key functions take the values, not their stored form.
        stored_args, stored_kwargs = decode_arguments(arguments)
        args = stored_args if args is UNCHANGED else args
        kwargs = stored_kwargs if kwargs is UNCHANGED else kwargs
    if limit is not None and limit.key_for(task, args, kwargs) != job.concurrency_key:
        _refuse_key(job, "concurrency key")
    if rate is not None and rate.key_for(task, args, kwargs) != job.rate_key:
        _refuse_key(job, "rate limit key")
    if unique is not None:
        claim = claim_for(task, args, kwargs, arguments)
        held = UniqueKey.objects.using(job._state.db).filter(
            result_id=job.result_id, key__startswith="unique:"
        )
        if claim is not None and held.exclude(key_hash=claim.key_hash).exists():
            _refuse_key(job, "unique key")


def _refuse_key(job: Job, what: str) -> None:
    raise NotEditableError(
        f"Job {job.result_id}: its {what} is made from its arguments and the new "
        f"arguments change it; cancel the job and enqueue a new one instead."
    )


def _checked_tags(tags: Any) -> tuple[str, ...]:
    if isinstance(tags, str) or not isinstance(tags, Iterable):
        raise TypeError(f"edit_job(tags=...) takes a list of tags, not {tags!r}.")
    values = list(tags)
    problems = tag_problems(values)
    if problems:
        raise ValueError("edit_job(tags=...): " + " ".join(problems))
    return tuple(sorted(set(values)))
