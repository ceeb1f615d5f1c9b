"""``manage.py robust_queue``: run the supervisor, or ``--check`` the set-up."""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Iterator, Mapping
from importlib import import_module
from typing import Any

from django.core.checks import CheckMessage
from django.core.management import call_command
from django.core.management.base import (
    BaseCommand,
    CommandError,
    CommandParser,
    OutputWrapper,
    SystemCheckError,
)
from django.db import DatabaseError

from ... import __version__
from ...exceptions import ConfigurationError, PidfileLocked
from ...operations import startup
from ...processes import console, throwaway
from ...processes.config import MODES
from ...processes.launch import build_config
from ...processes.supervisor import Supervisor


class _Subcommands(Mapping[str, type[BaseCommand]]):
    """Each subcommand's class, imported when it is asked for: the
    supervisor runs none of them, and what a module imports before the
    fork stays in every worker's memory."""

    def __init__(self, modules: dict[str, str]) -> None:
        self._modules = modules

    def __getitem__(self, name: str) -> type[BaseCommand]:
        module = import_module(f"{__package__}.{self._modules[name]}")
        return module.Command  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)


CANNOT_START = "Robust Queue cannot start:\n"

# `robust_queue NAME ...` runs the command of NAME with the rest.
SUBCOMMANDS = _Subcommands(
    {
        "clear": "robust_queue_clear",
        "health": "robust_queue_health",
        "status": "robust_queue_status",
        "pause": "robust_queue_pause",
        "resume": "robust_queue_resume",
        "retry-failed": "robust_queue_retry_failed",
        "metrics": "robust_queue_metrics",
        "cancel": "robust_queue_cancel",
        # The old name of clear: runs it after a deprecation message.
        "prune": "robust_queue_prune",
    }
)


class Command(BaseCommand):
    help = (
        "Run Robust Queue's supervisor with its workers, dispatchers and "
        "scheduler. Subcommands (each with --help): "
        + ", ".join(name for name in SUBCOMMANDS if name != "prune")
        + "."
    )

    # The program name a subcommand's usage shows (run_from_argv sets it).
    _argv0 = "manage.py"

    def get_version(self) -> str:
        return __version__

    def execute(self, *args: Any, **options: Any) -> str | None:
        if options.get("subcommand"):
            # The subcommand decides which checks it needs (health: none).
            options["skip_checks"] = True
        return super().execute(*args, **options)

    def check(self, *args: Any, **kwargs: Any) -> None:
        """Django's system checks, run in a throwaway child: they import
        the URLconf and ``makemigrations``, which the supervisor and the
        workers it forks would otherwise keep (``throwaway.py``). What
        they print and whether they fail are the same."""
        try:
            out, err, failure = throwaway.run(lambda: self._captured_check(args, kwargs))
        except DatabaseError as exc:
            # A server that is down: E024, as the migration check says it,
            # not a traceback (Django 6.1's checks connect).
            error = startup.format_message(startup.unreachable_in_system_checks(exc))
            raise CommandError(CANNOT_START + error) from exc
        if out:
            self.stdout.write(out, ending="")
        if err:
            self.stderr.write(err, lambda text: text, ending="")
        if failure is not None:
            raise SystemCheckError(failure)

    def _captured_check(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[str, str, str | None]:
        """Django's ``check()`` with its output kept: (stdout, stderr, the
        error's message if it failed)."""
        streams = self.stdout, self.stderr
        out, err = io.StringIO(), io.StringIO()
        self.stdout, self.stderr = OutputWrapper(out), OutputWrapper(err)
        try:
            super().check(*args, **kwargs)
            failure = None
        except SystemCheckError as exc:
            failure = str(exc)
        finally:
            self.stdout, self.stderr = streams
        return out.getvalue(), err.getvalue(), failure

    def run_from_argv(self, argv: list[str]) -> None:
        self._argv0 = argv[0]
        if len(argv) > 2 and argv[2] in SUBCOMMANDS:
            _subcommand_from_argv(argv[0], argv[2], argv[3:])
            return
        super().run_from_argv(argv)

    def add_arguments(self, parser: CommandParser) -> None:
        # `robust_queue -v 2 health` and call_command("robust_queue",
        # "status") reach handle() with the subcommand's name and words.
        parser.add_argument(
            "subcommand", nargs="?", choices=list(SUBCOMMANDS), help=argparse.SUPPRESS
        )
        parser.add_argument("subcommand_args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
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
        if options["subcommand"]:
            self._run_subcommand(options)
            return
        try:
            config = build_config(options)
        except (ConfigurationError, TypeError, ValueError) as exc:
            raise CommandError(f"Invalid ROBUST_QUEUE settings: {exc}") from exc
        self._report(startup.check(config))
        if options["check"]:
            self.stdout.write("Robust Queue configuration is valid.")
            return
        console.configure(options["verbosity"])
        try:
            code = Supervisor(config).run()
        except PidfileLocked as exc:
            raise CommandError(str(exc)) from exc
        sys.exit(code)

    def _report(self, messages: list[CheckMessage]) -> None:
        """Print warnings; raise (exit 1) on errors, naming each."""
        for message in messages:
            if not message.is_serious():
                self.stderr.write(self.style.WARNING(startup.format_message(message)))
        errors = [startup.format_message(m) for m in messages if m.is_serious()]
        if errors:
            raise CommandError(CANNOT_START + "\n".join(errors))

    def _run_subcommand(self, options: dict[str, Any]) -> None:
        """Run the subcommand as ``robust_queue NAME ...`` would, with the
        options given before its name (``-v 2``, ``--no-color``)."""
        name, words = options["subcommand"], list(options["subcommand_args"])
        given = [f"--{key.replace('_', '-')}" for key in _SUPERVISOR_OPTIONS if options.get(key)]
        if given:
            raise CommandError(f"{', '.join(given)} does not go with the subcommand {name!r}.")
        shared = [f"--verbosity={options['verbosity']}"]
        shared += [f"--{flag}" for flag in _SHARED_FLAGS if options.get(flag.replace("-", "_"))]
        if getattr(self, "_called_from_command_line", False):
            _subcommand_from_argv(self._argv0, name, shared + words)
            return
        streams = {key: options[key] for key in ("stdout", "stderr") if options.get(key)}
        call_command(SUBCOMMANDS[name](), *shared, *words, **streams)


# The supervisor's own options: meaningless before a subcommand.
_SUPERVISOR_OPTIONS = ("check", "only_work", "only_dispatch", "mode", "queues", "threads")
# Django's own flags that a subcommand gets when given before its name.
_SHARED_FLAGS = ("traceback", "no-color", "force-color")


def _subcommand_from_argv(argv0: str, name: str, words: list[str]) -> None:
    SUBCOMMANDS[name]().run_from_argv([argv0, f"robust_queue {name}", *words])
