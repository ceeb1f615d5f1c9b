"""``manage.py robust_queue health``: exit 0 if healthy, 1 if not."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ... import __version__
from ...exceptions import ConfigurationError
from ...operations import health
from ...options.validation import queue_name_error
from ...processes.config import SupervisorConfig
from .robust_queue_clear import duration


def seconds(value: str) -> float:
    """``60``, ``90s``, ``5m``, ``1h``: a threshold in seconds."""
    try:
        return duration(value).total_seconds()
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a duration such as 60, 90s, 5m or 1h (seconds if no unit), not {value!r}"
        ) from None


def ratio(value: str) -> float:
    """``0.5``, ``2``: dead rows per live row, more than 0."""
    try:
        result = float(value)
    except ValueError:
        result = 0.0
    if not 0 < result < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number more than 0, not {value!r}")
    return result


def queue_name(value: str) -> str:
    error = queue_name_error(value)
    if error is not None:
        raise argparse.ArgumentTypeError(error)
    return value


class Command(BaseCommand):
    help = (
        "Check that Robust Queue works here: database, migrations, this "
        "host's supervisor, heartbeats, queues served by live workers, the "
        "queue tables' dead rows and the oldest open transaction. Exit "
        "0 if healthy, 1 if not (for Kubernetes probes and cron)."
    )
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def get_version(self) -> str:
        return __version__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--max-latency",
            type=seconds,
            metavar="DURATION",
            help="fail when a queue's oldest ready job is older (60, 90s, 5m)",
        )
        parser.add_argument(
            "--queue",
            type=queue_name,
            action="append",
            default=[],
            metavar="NAME",
            help="only look at this queue (repeatable)",
        )
        parser.add_argument(
            "--require-workers",
            action="store_true",
            help="fail unless a live worker polls each --queue (or any worker runs)",
        )
        parser.add_argument(
            "--skip-supervisor",
            action="store_true",
            help="do not require a supervisor on this host (a host that only enqueues)",
        )
        parser.add_argument(
            "--fail-on-unused-queues",
            action="store_true",
            help="fail (not only warn) when a worker queue is used by no task (W020)",
        )
        parser.add_argument(
            "--max-transaction-age",
            type=seconds,
            metavar="DURATION",
            help="fail when a transaction on the database server is open longer (60, 5m, 1h)",
        )
        parser.add_argument(
            "--max-dead-tuple-ratio",
            type=ratio,
            metavar="RATIO",
            help="fail when a queue table holds more dead rows per live row "
            "(PostgreSQL; tables with 10,000+ dead rows)",
        )
        parser.add_argument(
            "--pidfile", help="the supervisor's pidfile (default: supervisor_pidfile)"
        )
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            config = SupervisorConfig.from_settings()
        except (ConfigurationError, TypeError, ValueError) as exc:
            raise CommandError(f"Invalid ROBUST_QUEUE settings: {exc}") from exc
        if options["pidfile"]:
            config = replace(config, pidfile=options["pidfile"])
        report = health.check(
            config,
            health.Thresholds(
                max_latency=options["max_latency"],
                queues=tuple(options["queue"]),
                require_workers=options["require_workers"],
                check_supervisor=not options["skip_supervisor"],
                fail_on_unused_queues=options["fail_on_unused_queues"],
                max_dead_tuple_ratio=options["max_dead_tuple_ratio"],
                max_transaction_age=options["max_transaction_age"],
            ),
        )
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2))
        else:
            for item in report.checks:
                mark = self.style.SUCCESS("ok  ") if item.ok else self.style.ERROR("FAIL")
                self.stdout.write(f"{mark} {item.name}: {item.detail}")
            for warning in report.warnings:
                self.stdout.write(self.style.WARNING(f"warn {warning}"))
            self.stdout.write("healthy" if report.healthy else "unhealthy")
        sys.exit(0 if report.healthy else 1)
