"""``RobustQueueBackend``: Django's task backend API over the job tables."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from asgiref.sync import sync_to_async
from django.core import checks as django_checks
from django.utils import timezone

from . import conf
from .arguments import encode_arguments, encoded_size
from .compat import (
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_enqueued,
)
from .concurrency import concurrency_key
from .exceptions import PayloadTooLargeError, UnknownTaskError
from .models import Job
from .models.job import RESULT_ID_MAX_LENGTH
from .registry import resolve_task
from .results import build_result
from .task import RobustQueueTask

TaskCall = tuple[Task, Sequence[Any], Mapping[str, Any]]

QUEUE_NAME_MAX_LENGTH = 64
RESULT_ID_PATTERN = re.compile(rf"^[A-Za-z0-9_-]{{1,{RESULT_ID_MAX_LENGTH}}}$")
TASK_PATH_MAX_LENGTH = 255


class RobustQueueBackend(BaseTaskBackend):
    """Stores tasks as jobs in the database; workers claim and run them."""

    supports_defer = True
    supports_priority = True
    supports_get_result = True
    supports_async_task = True
    task_class = RobustQueueTask

    # __init__ is the base class's: it runs at import time (@task, every
    # .using()) and must not touch the ORM or read other settings.

    @property
    def database(self) -> str:
        """The database alias that holds this backend's queue."""
        return str(self.options.get("database", conf.DEFAULT_DATABASE))

    def validate_task(self, task: Task) -> None:
        super().validate_task(task)
        if len(task.queue_name) > QUEUE_NAME_MAX_LENGTH:
            raise InvalidTask(
                f"Queue name {task.queue_name[:20]!r}... is longer than "
                f"{QUEUE_NAME_MAX_LENGTH} characters."
            )
        if len(task.module_path) > TASK_PATH_MAX_LENGTH:
            raise InvalidTask(
                f"Task path {task.module_path!r} is longer than "
                f"{TASK_PATH_MAX_LENGTH} characters."
            )

    def enqueue(
        self, task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> TaskResult:
        return self.enqueue_all([(task, args, kwargs)])[0]

    def enqueue_all(self, calls: Iterable[TaskCall]) -> list[TaskResult]:
        """Enqueue many tasks with one INSERT per table.

        Every call is validated and encoded before anything is written, so
        a bad argument in the last call leaves nothing behind.
        """
        prepared = [self._prepare(task, args, kwargs) for task, args, kwargs in calls]
        if not prepared:
            return []
        Job.objects.using(self.database).enqueue_all([job for _, job in prepared])
        results = [
            build_result(task, job, status=TaskResultStatus.READY)
            for task, job in prepared
        ]
        for result in results:
            task_enqueued.send(sender=type(self), task_result=result)
        return results

    async def aenqueue_all(self, calls: Iterable[TaskCall]) -> list[TaskResult]:
        return await sync_to_async(self.enqueue_all, thread_sensitive=True)(
            list(calls)
        )

    def get_result(self, result_id: str) -> TaskResult:
        if not isinstance(result_id, str) or not RESULT_ID_PATTERN.match(result_id):
            raise TaskResultDoesNotExist(f"No task result with id {result_id!r}.")
        jobs = Job.objects.using(self.database).with_executions()
        try:
            job = jobs.get(result_id=result_id)
        except Job.DoesNotExist as exc:
            raise TaskResultDoesNotExist(f"No task result with id {result_id!r}.") from exc
        try:
            task = resolve_task(job.task_path, job.backend_alias)
        except UnknownTaskError as exc:
            raise TaskResultDoesNotExist(
                f"Task result {result_id!r} names an unknown task: {exc}"
            ) from exc
        return build_result(task, job)

    def check(self, **kwargs: Any) -> list[django_checks.CheckMessage]:
        from .checks import check_backend  # noqa: PLC0415 - avoid import cycle

        return [*super().check(**kwargs), *check_backend(self)]

    def _prepare(
        self, task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> tuple[Task, Job]:
        if not isinstance(task, Task):
            raise InvalidTask(f"{task!r} is not a Task.")
        if task.backend != self.alias:
            raise InvalidTask(
                f"Task {task.module_path} uses backend {task.backend!r}, "
                f"not {self.alias!r}."
            )
        self.validate_task(task)
        arguments = encode_arguments(args, kwargs)
        key = concurrency_key(task, args, kwargs)
        self._check_size(task, arguments)
        job = Job(
            task_path=task.module_path,
            queue_name=task.queue_name,
            priority=task.priority,
            backend_alias=self.alias,
            arguments=arguments,
            concurrency_key=key,
            run_after=task.run_after,
            enqueued_at=timezone.now(),
        )
        return task, job

    def _check_size(self, task: Task, arguments: Mapping[str, Any]) -> None:
        size = encoded_size(arguments)
        limit = conf.max_payload_bytes(self.alias)
        if size > limit:
            raise PayloadTooLargeError(
                f"Arguments of task {task.module_path} are {size} bytes encoded; "
                f"the limit is {limit} bytes (OPTIONS['max_payload_bytes'])."
            )


def enqueue_all(calls: Iterable[TaskCall]) -> list[TaskResult]:
    """Enqueue ``(task, args, kwargs)`` triples in bulk, per backend.

    Results come back in the order of ``calls``.
    """
    calls = list(calls)
    by_backend: dict[str, list[int]] = {}
    for index, (task, _, _) in enumerate(calls):
        by_backend.setdefault(task.backend, []).append(index)
    results: list[TaskResult | None] = [None] * len(calls)
    for alias, indexes in by_backend.items():
        backend = calls[indexes[0]][0].get_backend()
        if not isinstance(backend, RobustQueueBackend):
            raise InvalidTask(f"Backend {alias!r} is not a RobustQueueBackend.")
        for index, result in zip(indexes, backend.enqueue_all(calls[i] for i in indexes)):
            results[index] = result
    return [result for result in results if result is not None]
