"""Stranded jobs: queued jobs, and recurring tasks, whose task path no task
declares (neither as its own path nor as an alias), and the verb that moves
them to a task.

A rename or a move of a task strands the jobs enqueued under its old path:
a worker fails each with ``UnknownTaskError`` when it claims it. Declaring
the old path with ``@aliases`` runs them; ``--check``, ``manage.py check``'s
start-up twin and the admin's stranded jobs page read ``stranded_jobs`` to
say which paths are left, and ``move`` rewrites the task path of the
waiting ones (ready, scheduled, blocked; never running jobs or finished
and failed history) in one transaction.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, Exists, Model, OuterRef, Q, QuerySet

from ..exceptions import InvalidTaskPathError, UnknownTaskError
from ..models import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    Job,
    ReadyExecution,
    RecurringTask,
    ScheduledExecution,
)
from ..options import registry


@dataclass(frozen=True, slots=True)
class StrandedPath:
    """A task path no task declares, and how many queued jobs name it."""

    task_path: str
    # Ready, scheduled or blocked: what ``move`` rewrites.
    waiting: int
    # Claimed: a worker is failing them now.
    running: int

    @property
    def jobs(self) -> int:
        return self.waiting + self.running


def _is(model: type[Model]) -> Exists:
    # A job in the state of the execution table ``model``.
    return Exists(model._default_manager.filter(job_id=OuterRef("pk")))


def _waiting() -> Q:
    return Q(_is(ReadyExecution)) | Q(_is(ScheduledExecution)) | Q(_is(BlockedExecution))


def stranded_jobs(using: str) -> list[StrandedPath]:
    """Each path that queued (ready, scheduled, blocked or claimed) jobs
    name and no task declares, with its counts, by path: one grouped query
    over the unfinished jobs."""
    known = registry.known_paths()
    rows = (
        Job.objects.using(using)
        .filter(finished_at__isnull=True)
        .exclude(task_path__in=known)
        .exclude(_is(FailedExecution))
        .values("task_path")
        .annotate(
            running=Count("pk", filter=Q(_is(ClaimedExecution))),
            total=Count("pk"),
        )
        .order_by("task_path")
    )
    found = [
        StrandedPath(row["task_path"], row["total"] - row["running"], row["running"])
        for row in rows
    ]
    return [path for path in found if path.jobs]


def stranded_recurring(using: str) -> dict[str, list[str]]:
    """Task path -> the keys of the recurring tasks that name it, for each
    path no task declares. Rows of declared schedules (``static``) are left
    out: a scheduler rewrites them from their declarations when it starts."""
    known = registry.known_paths()
    rows = (
        RecurringTask.objects.using(using)
        .filter(static=False)
        .exclude(task_path__in=known)
        .order_by("task_path", "key")
        .values_list("task_path", "key")
    )
    found: dict[str, list[str]] = {}
    for task_path, key in rows:
        found.setdefault(task_path, []).append(key)
    return found


def task_paths() -> list[str]:
    """The paths of the declared tasks, the targets of a move."""
    return [task.module_path for task in registry.declared_tasks()]


def suggestion(task_path: str, targets: list[str]) -> str | None:
    """The declared task ``task_path`` most likely became: the one task of
    the same name in another module, else the one whose name is closest
    (a rename); None if no name is close."""
    by_name: dict[str, list[str]] = {}
    for target in targets:
        by_name.setdefault(target.rpartition(".")[2], []).append(target)
    name = task_path.rpartition(".")[2]
    for close in difflib.get_close_matches(name, list(by_name), n=3, cutoff=0.75):
        if len(by_name[close]) == 1:
            return by_name[close][0]
        # Several modules hold that name: the closest whole path.
        found = difflib.get_close_matches(task_path, by_name[close], n=1, cutoff=0)
        return found[0] if found else None
    return None


def waiting_jobs(using: str, task_path: str) -> QuerySet[Job]:
    """The jobs of ``task_path`` that ``move`` rewrites: ready, scheduled
    or blocked."""
    return (
        Job.objects.using(using)
        .filter(task_path=task_path, finished_at__isnull=True)
        .filter(_waiting())
    )


def check_move(task_path: str, to_path: str) -> None:
    """Refuse a move that cannot help: ``UnknownTaskError`` if ``to_path``
    names no declared task, ``InvalidTaskPathError`` if the jobs of
    ``task_path`` are not stranded (a declared task runs them)."""
    targets = task_paths()
    if to_path not in targets:
        owner = registry.declared(to_path) if isinstance(to_path, str) else None
        hint = (
            f" It is an alias of task {owner.module_path}: move them there."
            if owner is not None
            else _close(to_path, targets)
        )
        raise UnknownTaskError(f"Cannot move jobs to {to_path!r}: it names no declared task.{hint}")
    running = registry.declared(task_path) if isinstance(task_path, str) else None
    if running is not None:
        how = "" if running.module_path == task_path else " through its @aliases"
        raise InvalidTaskPathError(
            f"Jobs of {task_path!r} are not stranded: task {running.module_path} runs them{how}."
        )


def move(using: str, task_path: str, to_path: str) -> int:
    """Make the waiting jobs of ``task_path`` (a path no task declares)
    jobs of the declared task ``to_path``, in one transaction; how many
    moved. Running jobs and history (finished, failed) keep their path.

    Raises ``UnknownTaskError`` or ``InvalidTaskPathError`` (``check_move``).
    """
    check_move(task_path, to_path)
    with transaction.atomic(using=using):
        return waiting_jobs(using, task_path).update(task_path=to_path)


def _close(path: object, targets: list[str]) -> str:
    if not isinstance(path, str):
        return ""
    close = difflib.get_close_matches(path, targets, n=1)
    return f" Did you mean {close[0]!r}?" if close else ""
