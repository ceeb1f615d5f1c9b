"""``manage.py robust_queue``: run the supervisor, or ``--check`` the set-up."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...config import MODES
from ...processes.launch import build_config, problems
from ...processes.supervisor import Supervisor
from .robust_queue_prune import Command as PruneCommand


class Command(BaseCommand):
    help = (
        "Run Robust Queue's supervisor with its workers, dispatchers and "
        "scheduler. `robust_queue prune --help` clears old jobs."
    )

    def run_from_argv(self, argv: list[str]) -> None:
        if argv[2:3] == ["prune"]:
            prune = PruneCommand()
            prune.run_from_argv([argv[0], "robust_queue prune", *argv[3:]])
            return
        super().run_from_argv(argv)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--check", action="store_true", help="validate and exit")
        roles = parser.add_mutually_exclusive_group()
        roles.add_argument("--only-work", action="store_true", help="workers only")
        roles.add_argument("--only-dispatch", action="store_true", help="no workers")
        parser.add_argument("--mode", choices=MODES, help="fork (default) or thread")
        parser.add_argument("--queues", help="comma-separated selectors for every worker")
        parser.add_argument("--threads", type=int, help="threads per worker")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            config = build_config(options)
        except (TypeError, ValueError) as exc:
            raise CommandError(f"Invalid ROBUST_QUEUE settings: {exc}") from exc
        errors = problems(config)
        if errors:
            raise CommandError("Invalid configuration:\n  " + "\n  ".join(errors))
        if options["check"]:
            self.stdout.write("Robust Queue configuration is valid.")
            return
        sys.exit(Supervisor(config).run())
