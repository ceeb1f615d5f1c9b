"""``manage.py robust_queue metrics``: print what the metrics view serves."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ... import __version__
from ...metrics.collect import collect
from ...metrics.exposition import render
from ..database import database_option


class Command(BaseCommand):
    help = "Print the Prometheus metrics (text format) of the queue's database."

    def get_version(self) -> str:
        return __version__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--database",
            default=None,
            help="database alias (default: the queue's database)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(render(collect(database_option(options["database"]))), ending="")
