"""``manage.py robust_queue cancel RESULT_ID...``: cancel jobs by result id."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ... import __version__, conf
from ...compat import DEFAULT_TASK_BACKEND_ALIAS, TaskResultDoesNotExist
from ...exceptions import NotCancellableError
from ...operations.cancellation import CancelOutcome, cancel

OUTCOMES = {
    CancelOutcome.CANCELLED: "cancelled",
    CancelOutcome.REQUESTED: "cancel requested (running: its worker stops it)",
}


class Command(BaseCommand):
    help = (
        "Cancel jobs by result id: a waiting job ends FAILED at once, a "
        "running one is asked to stop. Exits 1 if any id could not be "
        "cancelled (unknown, or already finished); the others still are. "
        "Put -- before the ids when one may start with '-'."
    )
    requires_system_checks: list[str] = []

    def get_version(self) -> str:
        return __version__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("result_ids", nargs="+", metavar="RESULT_ID")
        parser.add_argument(
            "--backend",
            default=DEFAULT_TASK_BACKEND_ALIAS,
            help="TASKS alias of the jobs' backend (default: %(default)s).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["backend"] not in conf.robust_queue_aliases():
            raise CommandError(
                f"{options['backend']!r} is not a Robust Queue backend alias in "
                f"TASKS (they are: {', '.join(conf.robust_queue_aliases()) or 'none'})."
            )
        failures = 0
        for result_id in options["result_ids"]:
            try:
                outcome = cancel(result_id, backend=options["backend"])
            except (TaskResultDoesNotExist, NotCancellableError) as exc:
                failures += 1
                self.stderr.write(f"{result_id}: error: {exc}")
                continue
            self.stdout.write(f"{result_id}: {OUTCOMES[outcome]}")
        if failures:
            # Not CommandError: every id is processed and reported first.
            sys.exit(1)
