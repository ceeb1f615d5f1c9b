"""``manage.py robust_queue_prune``: clear old finished and failed jobs."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ... import conf
from ...retention import DEFAULT_BATCH_SIZE, Retention

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
        "cutoff, in small batches. Unfinished work is never deleted."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than", type=duration, default=None,
            help="Finished jobs older than this (default: clear_finished_jobs_after).",
        )
        parser.add_argument(
            "--failed-older-than", type=duration, default=None,
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
            finished_older_than=conf.clear_finished_jobs_after() if finished is None else finished,
            failed_older_than=conf.clear_failed_jobs_after() if failed is None else failed,
            task_path=options["task"],
            batch_size=options["batch_size"],
        )
        using = options["database"] or conf.queue_database()
        counts = retention.clear(using, dry_run=options["dry_run"])
        verb = "Would delete" if options["dry_run"] else "Deleted"
        self.stdout.write(
            f"{verb} {counts['finished']} finished and {counts['failed']} failed job(s)."
        )
