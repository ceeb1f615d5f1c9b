"""``manage.py robust_queue``: run the supervisor, or ``--check`` the set-up."""

from __future__ import annotations

import sys
from typing import Any

from django.core.checks import CheckMessage
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ... import __version__, startup
from ...config import MODES
from ...exceptions import ConfigurationError
from ...processes import console
from ...processes.launch import build_config
from ...processes.supervisor import Supervisor
from .robust_queue_cancel import Command as CancelCommand
from .robust_queue_clear import Command as ClearCommand
from .robust_queue_health import Command as HealthCommand
from .robust_queue_metrics import Command as MetricsCommand
from .robust_queue_pause import Command as PauseCommand
from .robust_queue_prune import Command as PruneCommand
from .robust_queue_resume import Command as ResumeCommand
from .robust_queue_retry_failed import Command as RetryFailedCommand
from .robust_queue_status import Command as StatusCommand

# `robust_queue NAME ...` runs the command of NAME with the rest.
SUBCOMMANDS: dict[str, type[BaseCommand]] = {
    "clear": ClearCommand,
    "health": HealthCommand,
    "status": StatusCommand,
    "pause": PauseCommand,
    "resume": ResumeCommand,
    "retry-failed": RetryFailedCommand,
    "metrics": MetricsCommand,
    "cancel": CancelCommand,
    # The old name of clear: runs it after a deprecation message.
    "prune": PruneCommand,
}


class Command(BaseCommand):
    help = (
        "Run Robust Queue's supervisor with its workers, dispatchers and "
        "scheduler. Subcommands (each with --help): "
        + ", ".join(name for name in SUBCOMMANDS if name != "prune")
        + "."
    )

    def get_version(self) -> str:
        return __version__

    def run_from_argv(self, argv: list[str]) -> None:
        if len(argv) > 2 and argv[2] in SUBCOMMANDS:
            command = SUBCOMMANDS[argv[2]]()
            command.run_from_argv([argv[0], f"robust_queue {argv[2]}", *argv[3:]])
            return
        super().run_from_argv(argv)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--check",
            action="store_true",
            help="run the checks (settings, task modules, migrations, queues) and exit",
        )
        roles = parser.add_mutually_exclusive_group()
        roles.add_argument("--only-work", action="store_true", help="workers only")
        roles.add_argument("--only-dispatch", action="store_true", help="no workers")
        parser.add_argument("--mode", choices=MODES, help="fork (default) or thread")
        parser.add_argument("--queues", help="comma-separated selectors for every worker")
        parser.add_argument("--threads", type=int, help="threads per worker")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            config = build_config(options)
        except (ConfigurationError, TypeError, ValueError) as exc:
            raise CommandError(f"Invalid ROBUST_QUEUE settings: {exc}") from exc
        self._report(startup.check(config))
        if options["check"]:
            self.stdout.write("Robust Queue configuration is valid.")
            return
        console.configure(options["verbosity"])
        sys.exit(Supervisor(config).run())

    def _report(self, messages: list[CheckMessage]) -> None:
        """Print warnings; raise (exit 1) on errors, naming each."""
        for message in messages:
            if not message.is_serious():
                self.stderr.write(self.style.WARNING(startup.format_message(message)))
        errors = [startup.format_message(m) for m in messages if m.is_serious()]
        if errors:
            raise CommandError("Robust Queue cannot start:\n" + "\n".join(errors))
