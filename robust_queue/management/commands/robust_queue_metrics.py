"""``manage.py robust_queue metrics``: print what the metrics view serves."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ... import __version__, conf
from ...metrics.collect import collect
from ...metrics.exposition import render


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
        self.stdout.write(render(collect(options["database"] or conf.queue_database())), ending="")
