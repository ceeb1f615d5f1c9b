"""``manage.py robust_queue clear`` (or ``robust_queue_clear``): clear old
finished and failed jobs, as the supervisor's maintenance does."""

from __future__ import annotations

import difflib
import re
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ... import __version__, conf
from ...models import Job
from ...models.retention import DEFAULT_BATCH_SIZE, Retention
from ...options import discovery
from ..database import database_option

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhdw]?)$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def duration(value: str) -> timedelta:
    """``90``, ``90s``, ``30m``, ``12h``, ``7d`` or ``2w``."""
    match = _DURATION.match(value.strip())
    if not match:
        raise ValueError(value)
    return timedelta(seconds=float(match[1]) * _UNITS[match[2]])


class Command(BaseCommand):
    help = (
        "Delete finished jobs (and, if asked, failed jobs) older than a "
        "cutoff, in small batches, reporting the progress of a large "
        "clear. Unfinished work is never deleted."
    )

    def get_version(self) -> str:
        return __version__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            type=duration,
            default=None,
            help="Finished jobs older than this (default: clear_finished_jobs_after).",
        )
        parser.add_argument(
            "--failed-older-than",
            type=duration,
            default=None,
            help="Also failed jobs older than this (default: clear_failed_jobs_after, off).",
        )
        parser.add_argument("--task", default=None, help="Only jobs of this task path.")
        parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
        parser.add_argument("--database", default=None, help="Queue database alias.")
        parser.add_argument("--dry-run", action="store_true", help="Only count.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1.")
        finished, failed = options["older_than"], options["failed_older_than"]
        retention = Retention(
            finished_older_than=conf.get(conf.CLEAR_FINISHED_JOBS_AFTER)
            if finished is None
            else finished,
            failed_older_than=conf.get(conf.CLEAR_FAILED_JOBS_AFTER) if failed is None else failed,
            task_path=options["task"],
            batch_size=options["batch_size"],
        )
        using = database_option(options["database"])
        if options["task"] is not None:
            _require_known_task(options["task"], using)
        self.verbosity = options["verbosity"]
        counts = retention.clear(using, dry_run=options["dry_run"], report=self._report)
        verb = "Would delete" if options["dry_run"] else "Deleted"
        self.stdout.write(
            f"{verb} {counts['finished']} finished and {counts['failed']} failed job(s)."
        )

    def _report(self, message: str, *args: object) -> None:
        # A large clear says what it does and how far it got (batching.py).
        if self.verbosity >= 1:
            self.stdout.write(message % args)


def _require_known_task(task_path: str, using: str) -> None:
    """A task path names a task in the code or the jobs of one that was."""
    paths = sorted(task.module_path for task in discovery.discover().tasks())
    if task_path in paths or Job.objects.using(using).filter(task_path=task_path).exists():
        return
    close = difflib.get_close_matches(task_path, paths, n=1)
    raise CommandError(
        f"Unknown task {task_path!r}: no task has this path and no job in "
        f"database {using!r} names it." + (f" Did you mean {close[0]!r}?" if close else "")
    )
