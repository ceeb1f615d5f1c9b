"""``manage.py robust_queue status``: queues, processes, recent failures."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ... import __version__
from ...operations.status import ago, short, status
from ..database import database_option


class Command(BaseCommand):
    help = "Print the queues (size, latency, paused, workers), processes and recent failures."
    requires_system_checks: list[str] = []

    def get_version(self) -> str:
        return __version__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--database", default=None, help="Queue database alias.")
        parser.add_argument("--failures", type=int, default=10, help="How many recent failures.")

    def handle(self, *args: Any, **options: Any) -> None:
        using = database_option(options["database"])
        snapshot = status(using, failures=max(options["failures"], 0))
        self._table(
            "Queues",
            ["queue", "ready", "latency", "paused", "workers", "running", "status"],
            [
                [
                    q.name,
                    str(q.size),
                    short(q.latency),
                    "yes" if q.is_paused else "no",
                    f"{q.workers} ({q.busy}/{q.threads} threads busy)",
                    str(q.running),
                    q.status,
                ]
                for q in snapshot.queues
            ],
        )
        self._table(
            "Processes",
            ["kind", "name", "pid", "host", "heartbeat"],
            [
                [p.kind, p.name, str(p.pid), p.hostname, ago(p.last_heartbeat_at)]
                for p in snapshot.processes
            ],
        )
        self._table(
            f"Recent failures ({snapshot.failed_total} failed job(s) in all)",
            ["failed", "task", "queue", "exception", "result id"],
            [
                [ago(f.failed_at), f.task_path, f.queue_name, f.exception, f.result_id]
                for f in snapshot.failures
            ],
        )

    def _table(self, title: str, header: list[str], rows: list[list[str]]) -> None:
        self.stdout.write(self.style.MIGRATE_HEADING(title))
        if not rows:
            self.stdout.write("  (none)\n")
            return
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            self.stdout.write(
                "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            )
        self.stdout.write("")
