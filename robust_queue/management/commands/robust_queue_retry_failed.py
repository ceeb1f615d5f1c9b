"""``manage.py robust_queue retry-failed``: make failed jobs ready again."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ... import __version__
from ...models import FailedExecution, Job
from ...operations import bulk
from ..database import database_option


class Command(BaseCommand):
    help = (
        "Retry failed jobs (all, or those of a task, a queue or an exception "
        "class), in batches, like the admin's Retry action."
    )
    requires_system_checks: list[str] = []

    def get_version(self) -> str:
        return __version__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--task", help="Only jobs of this task path.")
        parser.add_argument("--queue", help="Only jobs of this queue.")
        parser.add_argument(
            "--exception",
            help="Only jobs whose last error is this class: a full path "
            "(myapp.errors.Timeout) or a class name (Timeout).",
        )
        parser.add_argument("--database", default=None, help="Queue database alias.")
        parser.add_argument("--dry-run", action="store_true", help="Only count.")

    def handle(self, *args: Any, **options: Any) -> None:
        using = database_option(options["database"])
        jobs = Job.objects.using(using).filter(failed_execution__isnull=False)
        if options["task"]:
            jobs = jobs.filter(task_path=options["task"])
        if options["queue"]:
            jobs = jobs.filter(queue_name=options["queue"])
        if options["exception"]:
            jobs = jobs.filter(pk__in=_with_exception(using, options["exception"]))
        if options["dry_run"]:
            self.stdout.write(f"Would retry {jobs.count()} failed job(s).")
            return
        outcome = bulk.retry(jobs)
        skipped = f" ({outcome.skipped} moved on meanwhile)" if outcome.skipped else ""
        self.stdout.write(f"Retried {outcome.changed} failed job(s){skipped}.")


def _with_exception(using: str, name: str) -> list[int]:
    """Failed jobs whose error is class ``name`` (a path, or a bare name).

    Compared in Python: the error is JSON, and JSON key lookups differ by
    database; the failed table holds only what awaits a person.
    """
    rows = FailedExecution.objects.using(using).values_list("job_id", "error")
    matches = []
    for job_id, error in rows.iterator():
        path = str(error.get("exception_class_path", "")) if isinstance(error, dict) else ""
        if path == name or path.rsplit(".", 1)[-1] == name:
            matches.append(job_id)
    return matches
