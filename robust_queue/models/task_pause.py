"""A paused task: workers leave its jobs ready; enqueueing goes on.

A worker that knows of no task pause claims with one extra probe of this
(empty) table inside its claim statement; one that knows of some checks
each candidate job against it. Either way the check runs in the claim's
own snapshot, so no claim that starts after ``pause`` returned takes a job
of the paused task. Resuming needs nothing else: the jobs never left
``ready_execution``.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from ..exceptions import InvalidTaskPathError

MAX_TASK_PATH = 255


class TaskPauseQuerySet(models.QuerySet["TaskPause"]):
    def pause(self, task_path: str) -> bool:
        """Stop workers claiming jobs of ``task_path``; True if newly paused.

        Raises ``InvalidTaskPathError`` for a path no job can carry.
        """
        _check(task_path)
        _, created = self.get_or_create(task_path=task_path)
        return created

    def resume(self, task_path: str) -> bool:
        """Let workers claim ``task_path``'s jobs again; True if it was paused."""
        _check(task_path)
        deleted, _ = self.filter(task_path=task_path).delete()
        return deleted > 0

    def is_paused(self, task_path: str) -> bool:
        return self.filter(task_path=task_path).exists()


class TaskPause(models.Model):
    task_path = models.CharField(max_length=MAX_TASK_PATH, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = TaskPauseQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_task_pause"
        default_permissions = ("view",)
        permissions = [("pause_task", "Can pause and resume tasks")]

    def __str__(self) -> str:
        return f"pause of {self.task_path}"


def _check(task_path: object) -> None:
    if not isinstance(task_path, str) or not task_path.strip():
        raise InvalidTaskPathError(f"A task path must be a non-empty string, not {task_path!r}.")
    if len(task_path) > MAX_TASK_PATH:
        raise InvalidTaskPathError(
            f"Task path {task_path[:40]!r}... is {len(task_path)} characters long; "
            f"the most a job can carry is {MAX_TASK_PATH}."
        )
