"""`robust_queue health`: each check, thresholds, and bad input."""

from __future__ import annotations

import json
import os
import socket
import tempfile
from datetime import timedelta
from io import StringIO
from typing import Any

from django.core.management import CommandError, call_command
from django.test import TransactionTestCase, override_settings
from django.utils import timezone

from robust_queue.models import Pause, Process, ProcessKind, ReadyExecution
from testproject import tasks

# No warning about the database server's upkeep (table_health.py): the
# tests that count warnings share their server with other test runs.
QUIET_SERVER = {"health_transaction_age": None, "health_dead_tuple_ratio": None}


def run_health(*args: str) -> tuple[int, dict[str, Any]]:
    out = StringIO()
    try:
        call_command("robust_queue_health", "--json", *args, stdout=out)
    except SystemExit as exit:
        code = int(exit.code or 0)
    else:
        raise AssertionError("health must exit with a code")
    return code, json.loads(out.getvalue())


def checks(report: dict[str, Any]) -> dict[str, tuple[bool, str]]:
    return {c["name"]: (c["ok"], c["detail"]) for c in report["checks"]}


def register(
    kind: str,
    *,
    host: str | None = None,
    queues: list[str] | None = None,
    age: float = 0,
    name: str = "",
) -> Process:
    process = Process.objects.create(
        kind=kind,
        name=name or f"{kind}-{Process.objects.count()}",
        pid=os.getpid(),
        hostname=host or socket.gethostname(),
        metadata={"queues": queues} if queues is not None else {},
    )
    if age:
        Process.objects.filter(pk=process.pk).update(
            last_heartbeat_at=timezone.now() - timedelta(seconds=age)
        )
    return process


class HealthTests(TransactionTestCase):
    def test_healthy_with_a_live_supervisor_on_this_host(self) -> None:
        register(ProcessKind.SUPERVISOR)
        code, report = run_health()
        self.assertEqual(code, 0, report)
        self.assertIs(report["healthy"], True)
        self.assertEqual(
            sorted(checks(report)),
            [
                "children",
                "database",
                "dead_tuples",
                "heartbeats",
                "migrations",
                "queues",
                "supervisor",
                "transactions",
            ],
        )

    def test_no_supervisor_on_this_host_is_unhealthy(self) -> None:
        register(ProcessKind.SUPERVISOR, host="elsewhere")
        code, report = run_health()
        self.assertEqual(code, 1)
        ok, detail = checks(report)["supervisor"]
        self.assertIs(ok, False)
        self.assertIn(f"no supervisor on {socket.gethostname()}", detail)
        # A host that only enqueues can skip it.
        self.assertEqual(run_health("--skip-supervisor")[0], 0)

    def test_a_stale_supervisor_row_is_no_supervisor(self) -> None:
        register(ProcessKind.SUPERVISOR, age=3600, name="old-supervisor")
        code, report = run_health()
        self.assertEqual(code, 1)
        self.assertIs(checks(report)["supervisor"][0], False)
        ok, detail = checks(report)["heartbeats"]
        self.assertIs(ok, False)
        self.assertIn("old-supervisor", detail)

    def test_stale_processes_of_other_hosts_only_warn(self) -> None:
        register(ProcessKind.SUPERVISOR)
        register(ProcessKind.WORKER, host="gone-host", age=3600, name="lost-worker")
        code, report = run_health()
        self.assertEqual(code, 0, report)
        self.assertTrue(any("lost-worker on gone-host" in w for w in report["warnings"]))

    def test_ready_jobs_without_a_live_worker_name_the_queue(self) -> None:
        register(ProcessKind.SUPERVISOR)
        tasks.report.enqueue(1)  # queue "reports"
        tasks.add.enqueue(1, 2)  # queue "default"
        register(ProcessKind.WORKER, queues=["default"])
        code, report = run_health()
        self.assertEqual(code, 1)
        ok, detail = checks(report)["queues"]
        self.assertEqual(
            (ok, detail), (False, "ready jobs and no live worker for queue(s): reports")
        )
        # A prefix selector covers it; so does a pause (on purpose).
        register(ProcessKind.WORKER, queues=["rep*"])
        self.assertEqual(run_health()[0], 0)

    def test_a_paused_queue_needs_no_worker(self) -> None:
        register(ProcessKind.SUPERVISOR)
        tasks.report.enqueue(1)
        Pause.objects.create(queue_name="reports")
        self.assertEqual(run_health()[0], 0)

    def test_a_stale_worker_covers_nothing(self) -> None:
        register(ProcessKind.SUPERVISOR)
        register(ProcessKind.WORKER, queues=["*"], host="other", age=3600)
        tasks.add.enqueue(1, 2)
        self.assertIs(checks(run_health()[1])["queues"][0], False)

    def test_max_latency(self) -> None:
        register(ProcessKind.SUPERVISOR)
        register(ProcessKind.WORKER, queues=["*"])
        tasks.add.enqueue(1, 2)
        self.assertEqual(run_health("--max-latency", "60")[0], 0)
        ReadyExecution.objects.update(created_at=timezone.now() - timedelta(minutes=10))
        code, report = run_health("--max-latency", "5m")
        self.assertEqual(code, 1)
        ok, detail = checks(report)["latency"]
        self.assertIs(ok, False)
        self.assertRegex(detail, r"older than 300s in: default \(60\ds\)")
        # --queue narrows the look to other queues.
        self.assertEqual(run_health("--max-latency", "5m", "--queue", "reports")[0], 0)

    def test_require_workers(self) -> None:
        register(ProcessKind.SUPERVISOR)
        code, report = run_health("--require-workers")
        self.assertEqual((code, checks(report)["workers"]), (1, (False, "no live worker")))
        register(ProcessKind.WORKER, queues=["mail*"])
        self.assertEqual(run_health("--require-workers")[0], 0)
        self.assertEqual(run_health("--require-workers", "--queue", "mail.eu")[0], 0)
        code, report = run_health("--require-workers", "--queue", "mail", "--queue", "sms")
        self.assertEqual(checks(report)["workers"], (False, "no live worker polls queue(s): sms"))

    def test_pidfile(self) -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "rq.pid")
            code, report = run_health("--pidfile", path)
            self.assertEqual((code, checks(report)["supervisor"][0]), (1, False))
            with open(path, "w") as file:
                file.write(f"{os.getpid()}\n")
            self.assertEqual(run_health("--pidfile", path)[0], 0)
            with open(path, "w") as file:
                file.write("999999999\n")
            code, report = run_health("--pidfile", path)
            self.assertIn("(pid 999999999) is gone", checks(report)["supervisor"][1])

    def test_text_output(self) -> None:
        out = StringIO()
        with self.assertRaises(SystemExit) as exit:
            call_command("robust_queue_health", stdout=out)
        self.assertEqual(exit.exception.code, 1)
        self.assertIn("FAIL supervisor: no supervisor on", out.getvalue())
        self.assertTrue(out.getvalue().rstrip().endswith("unhealthy"))

    @override_settings(
        ROBUST_QUEUE={
            "workers": [{"queues": ["default", "reprots"]}],
            # Other sessions on a shared server may hold a transaction open.
            **QUIET_SERVER,
        }
    )
    def test_a_worker_queue_no_task_uses_is_a_warning(self) -> None:
        """Start-up warning W020 (a misspelt queue in the settings) is
        reported, without failing the check."""
        register(ProcessKind.SUPERVISOR)
        code, report = run_health()
        self.assertEqual(code, 0, report)
        self.assertEqual(report["unused_worker_queues"], ["reprots"])
        [warning] = report["warnings"]
        self.assertIn("(robust_queue.W020) Worker queue 'reprots' is used by no task", warning)
        self.assertIn("Did you mean 'reports'?", warning)
        self.assertNotIn("worker_queues", checks(report))
        out = StringIO()
        with self.assertRaises(SystemExit):
            call_command("robust_queue_health", stdout=out)
        self.assertIn("warn (robust_queue.W020) Worker queue 'reprots'", out.getvalue())

    @override_settings(ROBUST_QUEUE={"workers": [{"queues": ["default", "reprots"]}]})
    def test_a_flag_makes_an_unused_worker_queue_a_failure(self) -> None:
        register(ProcessKind.SUPERVISOR)
        code, report = run_health("--fail-on-unused-queues")
        self.assertEqual(code, 1)
        self.assertEqual(
            checks(report)["worker_queues"], (False, "worker queue(s) that no task uses: reprots")
        )

    def test_the_queues_of_live_workers_count_too(self) -> None:
        """A supervisor started with --queues registers its workers' selectors."""
        register(ProcessKind.SUPERVISOR)
        register(ProcessKind.WORKER, queues=["reports", "mial*"])
        code, report = run_health("--fail-on-unused-queues")
        self.assertEqual(code, 1)
        self.assertEqual(report["unused_worker_queues"], ["mial*"])
        # A stale worker's selectors are not looked at.
        register(ProcessKind.WORKER, queues=["gone*"], host="other", age=3600)
        self.assertEqual(run_health()[1]["unused_worker_queues"], ["mial*"])

    def test_workers_on_used_queues_pass_the_flag(self) -> None:
        register(ProcessKind.SUPERVISOR)
        register(ProcessKind.WORKER, queues=["reports", "def*"])
        code, report = run_health("--fail-on-unused-queues")
        self.assertEqual(code, 0, report)
        self.assertEqual(report["unused_worker_queues"], [])
        self.assertEqual(
            checks(report)["worker_queues"], (True, "every worker queue is used by a task")
        )

    def test_bad_thresholds_are_clear_errors(self) -> None:
        for args, message in (
            (["--max-latency", "soon"], "must be a duration such as 60, 90s, 5m or 1h"),
            (["--max-latency", "-5"], "not '-5'"),
            (["--queue", "bad queue"], "argument --queue"),
        ):
            with self.subTest(args=args):
                with self.assertRaisesMessage(CommandError, message):
                    call_command("robust_queue_health", *args)
