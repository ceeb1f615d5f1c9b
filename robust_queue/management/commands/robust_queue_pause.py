"""``manage.py robust_queue pause NAME...``: stop workers claiming from queues."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ... import __version__
from ...exceptions import InvalidQueueNameError
from ...models import Queue
from ...options.validation import queue_name_error
from ..database import database_option


class Command(BaseCommand):
    help = "Pause queues: workers stop claiming from them; enqueueing goes on."
    verb = "pause"
    requires_system_checks: list[str] = []

    def get_version(self) -> str:
        return __version__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("queues", nargs="+", metavar="QUEUE")
        parser.add_argument("--database", default=None, help="Queue database alias.")

    def handle(self, *args: Any, **options: Any) -> None:
        using = database_option(options["database"])
        if self.verb == "pause":
            # Every name checked before any is paused: nothing half-done.
            # (Resume takes any name: a pause written by hand can go.)
            for name in options["queues"]:
                if (error := queue_name_error(name)) is not None:
                    raise CommandError(f"{error} Nothing was paused.")
        for name in options["queues"]:
            queue = Queue(name, using)
            try:
                changed = queue.pause() if self.verb == "pause" else queue.resume()
            except InvalidQueueNameError as exc:
                raise CommandError(str(exc)) from exc
            done = f"{self.verb}d" if changed else f"was already {self.verb}d"
            self.stdout.write(f"Queue {name!r} {done}.")
