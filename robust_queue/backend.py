"""``RobustQueueBackend``: Django's task backend API over the job tables."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias

from asgiref.sync import sync_to_async
from django.core import checks as django_checks
from django.db import DatabaseError
from django.utils import timezone

from . import conf
from .arguments import Shown, encode_arguments, encoded_size, shown_arguments
from .compat import (
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_enqueued,
)
from .exceptions import BatchError, PayloadTooLargeError, QueueNotMigratedError, UnknownTaskError
from .models import BatchMember, Job, UniqueKey, batch_scope
from .models.instances import new_instance
from .models.job import RESULT_ID_MAX_LENGTH
from .models.sql import dialect_for
from .options import fair_groups, registry, tagging
from .options.backend_options import check_backend
from .options.concurrency import concurrency_key
from .options.encryption import withheld_claim
from .options.rate_limits import RATE_LIMIT, rate_key
from .options.sealing import seal
from .options.task import RobustQueueTask
from .options.unique_claims import UniqueClaim, claim_for
from .options.uniqueness import UNIQUE
from .options.validation import check_task_names
from .running import enqueue_metadata as job_metadata
from .running import tracing
from .running.results import (
    as_duplicate,
    build_discarded_result,
    build_result,
    build_unrunnable_result,
)

TaskCall: TypeAlias = "tuple[Task[..., Any], Sequence[Any], Mapping[str, Any]]"
# A call ready to write: its task, its job, its claim on a unique key, and
# its arguments as its result shows them.
Prepared: TypeAlias = "tuple[Task[..., Any], Job, UniqueClaim | None, Shown]"

RESULT_ID_PATTERN = re.compile(rf"^[A-Za-z0-9_-]{{1,{RESULT_ID_MAX_LENGTH}}}$")
TASK_PATH_MAX_LENGTH = 255


class RobustQueueBackend(BaseTaskBackend):
    """Stores tasks as jobs in the database; workers claim and run them."""

    supports_defer = True
    supports_priority = True
    supports_get_result = True
    supports_async_task = True
    # The backport declares task_class as Task with its class's unbound type
    # variables, which no subclass can match; the assignment is sound.
    task_class = RobustQueueTask  # type: ignore[assignment]

    # __init__ is the base class's: it runs at import time (@task, every
    # .using()) and must not touch the ORM or read other settings.

    @property
    def database(self) -> str:
        """The database alias that holds this backend's queue."""
        return str(self.options.get("database", conf.DEFAULT_DATABASE))

    def validate_task(self, task: Task[..., Any]) -> None:
        check_task_names(task)
        super().validate_task(task)
        if len(task.module_path) > TASK_PATH_MAX_LENGTH:
            raise InvalidTask(
                f"Task path {task.module_path!r} is longer than {TASK_PATH_MAX_LENGTH} characters."
            )
        if isinstance(task, self.task_class):
            # Only a task declared for this backend's class: a .using()
            # copy of another backend's task is a plain Task.
            registry.register(task)

    def enqueue(
        self, task: Task[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> TaskResult[Any]:
        return self.enqueue_all([(task, args, kwargs)])[0]

    def enqueue_all(self, calls: Iterable[TaskCall]) -> list[TaskResult[Any]]:
        """Enqueue many tasks with one INSERT per table.

        Every call is validated and encoded before anything is written, so
        a bad argument in the last call leaves nothing behind. A unique
        task whose key is taken gets the existing job's result; a job a
        concurrency limit discarded gets a FAILED result. ``task_enqueued``
        is sent for the jobs written.
        """
        # Each distinct task is checked once per call, not once per job;
        # kept here so that no id is reused while the call runs.
        checked: dict[int, Task[..., Any]] = {}
        return self._write(
            [self._prepare(task, args, kwargs, checked=checked) for task, args, kwargs in calls]
        )

    def enqueue_once(
        self, task: Task[..., Any], key: str, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> TaskResult[Any]:
        """``enqueue`` under an idempotency key (see ``enqueueing.enqueue_once``)."""
        return self._write([self._prepare(task, args, kwargs, once_key=key)])[0]

    async def aenqueue_once(
        self, task: Task[..., Any], key: str, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> TaskResult[Any]:
        return await sync_to_async(self.enqueue_once, thread_sensitive=True)(
            task, key, args, kwargs
        )

    def enqueue_after(
        self,
        parents: Sequence[str],
        task: Task[..., Any],
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
    ) -> TaskResult[Any]:
        """``enqueue`` a job that waits for the jobs of result ids
        ``parents`` (see ``dependencies.enqueue_after``)."""
        prepared = self._prepare(task, args, kwargs)
        prepared[1].pending_parents = tuple(parents)
        return self._write([prepared])[0]

    @tracing.traced_enqueue  # spans when ROBUST_QUEUE["opentelemetry"] is on
    def _write(self, prepared: list[Prepared]) -> list[TaskResult[Any]]:
        if not prepared:
            return []
        jobs = [job for _, job, _, _ in prepared]
        standing: list[Job | None] | list[Job]
        try:
            if any(claim is not None for _, _, claim, _ in prepared):
                unique_keys = UniqueKey.objects.using(self.database)
                standing = unique_keys.enqueue_all(jobs, [claim for _, _, claim, _ in prepared])
            else:
                kept = Job.objects.using(self.database).enqueue_all(jobs)
                standing = jobs if len(kept) == len(jobs) else _standing(jobs, kept)
        except DatabaseError as exc:
            raise_if_not_migrated(self.database, exc)
            raise
        results, enqueued = [], []
        new_ids: set[int] = set()
        joining: list[BatchMember] = []
        for (task, job, _, shown), stood in zip(prepared, standing, strict=True):
            if stood is None:
                results.append(build_discarded_result(task, job, shown))
            elif stood is job:
                # The arguments as given, not decoded back from the job.
                ready = TaskResultStatus.READY
                enqueued.append(build_result(task, job, status=ready, shown=shown))
                results.append(enqueued[-1])
            else:
                # A duplicate: of a stored job, or of one written just now.
                new_ids = new_ids or {id(job) for job in jobs}
                is_new = id(stood) in new_ids
                if job.pending_batch is not None and not is_new:
                    joining.append(BatchMember(batch_id=job.pending_batch, job_id=stood.pk))
                results.append(as_duplicate(self._result_of(stood, is_new=is_new)))
        if joining:
            _join_batches(self.database, joining)
        for result in enqueued:
            task_enqueued.send(sender=type(self), task_result=result)
        return results

    async def aenqueue_all(self, calls: Iterable[TaskCall]) -> list[TaskResult[Any]]:
        return await sync_to_async(self.enqueue_all, thread_sensitive=True)(list(calls))

    def get_result(self, result_id: str) -> TaskResult[Any]:
        if not isinstance(result_id, str) or not RESULT_ID_PATTERN.match(result_id):
            raise TaskResultDoesNotExist(f"No task result with id {result_id!r}.")
        jobs = Job.objects.using(self.database).with_executions()
        try:
            job = jobs.get(result_id=result_id)
        except Job.DoesNotExist as exc:
            raise TaskResultDoesNotExist(f"No task result with id {result_id!r}.") from exc
        return self._result_of(job)

    def _result_of(self, job: Job, *, is_new: bool = False) -> TaskResult[Any]:
        """The result of a stored job (loaded ``with_executions``); READY
        for one this enqueue has just written."""
        try:
            task = registry.rebuild_task(job)
        except UnknownTaskError as exc:
            # The job exists: its real state, and why it cannot run.
            return build_unrunnable_result(job, exc)
        if is_new:
            return build_result(task, job, status=TaskResultStatus.READY)
        return build_result(task, job)

    def check(self, **kwargs: Any) -> list[django_checks.CheckMessage]:
        return [*super().check(**kwargs), *check_backend(self)]

    def _prepare(
        self,
        task: Task[..., Any],
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        once_key: str | None = None,
        checked: dict[int, Task[..., Any]] | None = None,
    ) -> Prepared:
        if checked is None or checked.get(id(task)) is not task:
            self._check_task(task)
            if checked is not None:
                checked[id(task)] = task
        arguments = encode_arguments(args, kwargs)
        key = concurrency_key(task, args, kwargs)
        self._check_size(task, arguments)
        metadata = job_metadata.for_enqueue(task)
        values = {
            "task_path": task.module_path,
            "queue_name": task.queue_name,
            "priority": task.priority,
            "backend_alias": self.alias,
            "arguments": arguments,
            "concurrency_key": key,
            "run_after": task.run_after,
            "enqueued_at": timezone.now(),
        }
        if metadata:
            values["metadata"] = metadata
        job = new_instance(Job, values)
        tags = tagging.for_enqueue(task)
        if tags:
            job.pending_tags = tags
        group = fair_groups.for_enqueue(task, args, kwargs)
        if group is not None:
            self._join_group(task, job, group)
        if RATE_LIMIT.of(task) is not None:
            job.rate_key = rate_key(task, args, kwargs)
        scope = batch_scope.current()
        if scope is not None:
            job.pending_batch = self._batch_of(task, scope)
        claim = None
        if once_key is not None or UNIQUE.of(task) is not None:
            claim = claim_for(task, args, kwargs, arguments, once_key)
        if getattr(task, "encrypted", None) is not None:  # @encrypted (encryption.py)
            # Every key above is made from the plaintext; only then sealed.
            job.arguments = seal(arguments, f"the arguments of task {task.module_path}")
            claim = withheld_claim(task, claim)
        return task, job, claim, shown_arguments(args, kwargs)

    def _join_group(self, task: Task[..., Any], job: Job, group: str) -> None:
        # A fair group (fair_groups.py); its cap, if any, is the job's
        # concurrency key.
        job.group_key = group
        cap = fair_groups.cap_key(task, job.queue_name, group)
        if cap:
            job.concurrency_key = cap

    def _batch_of(self, task: Task[..., Any], scope: batch_scope.Scope) -> int:
        if scope.backend_alias != self.alias:
            raise BatchError(
                f"Task {task.module_path} of backend {self.alias!r} cannot join a batch of "
                f"backend {scope.backend_alias!r}."
            )
        return scope.batch_pk

    def _check_task(self, task: Task[..., Any]) -> None:
        """Refuse a task this backend cannot enqueue (``InvalidTask``)."""
        if not isinstance(task, Task):
            raise InvalidTask(f"{task!r} is not a Task.")
        if task.backend != self.alias:
            raise InvalidTask(
                f"Task {task.module_path} uses backend {task.backend!r}, not {self.alias!r}."
            )
        self.validate_task(task)
        registry.check_enqueue(task)

    def _check_size(self, task: Task[..., Any], arguments: Mapping[str, Any]) -> None:
        size = encoded_size(arguments)
        limit = conf.max_payload_bytes(self.alias)
        if size > limit:
            raise PayloadTooLargeError(
                f"Arguments of task {task.module_path} are {size} bytes encoded; "
                f"the limit is {limit} bytes (OPTIONS['max_payload_bytes'])."
            )


def raise_if_not_migrated(using: str, exc: DatabaseError) -> None:
    """Raise ``QueueNotMigratedError`` naming the fix if ``exc`` says the
    queue's tables or columns are missing from database ``using`` (read
    only once a statement failed: enqueue's success path pays nothing)."""
    if not dialect_for(using).lacks_schema(exc):
        return
    command = "python manage.py migrate"
    if using != conf.DEFAULT_DATABASE:
        command += f" --database {using}"
    raise QueueNotMigratedError(
        f"The queue's tables are missing or out of date in database {using!r}: "
        f"Robust Queue's migrations are not applied there. Run `{command}` first. "
        f"({type(exc).__name__}: {str(exc).strip()})"
    ) from exc


def _join_batches(using: str, members: list[BatchMember]) -> None:
    """A duplicate enqueued inside ``batch()`` stands for the existing job:
    that job joins the batch, which then waits for it, unless it already
    belongs to a batch (a job belongs to one; the row is left as it is)."""
    BatchMember.objects.using(using).bulk_create(members, ignore_conflicts=True)


def _standing(jobs: list[Job], kept: list[Job]) -> list[Job | None]:
    """Each job, or None where a concurrency limit discarded it."""
    ids = {id(job) for job in kept}
    return [job if id(job) in ids else None for job in jobs]
