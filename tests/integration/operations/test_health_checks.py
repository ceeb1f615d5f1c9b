"""The checks behind ``robust_queue health``, run in this process against
the test database (tests/processes/test_health.py runs the command)."""

from __future__ import annotations

import os
import socket
import tempfile
from datetime import timedelta
from pathlib import Path

from django.test import SimpleTestCase, TestCase, override_settings
from django.utils import timezone

from robust_queue.models import Pause, Process, ProcessKind, ReadyExecution
from robust_queue.operations import health
from robust_queue.processes.config import SupervisorConfig
from testproject import tasks

from .test_health import QUIET_SERVER

HERE = socket.gethostname()


def register(
    kind: str, *, host: str = HERE, silent_for: float = 0.0, **metadata: object
) -> Process:
    process = Process.objects.register(
        kind=kind,
        name=f"{kind}-{host}-{Process.objects.count()}",
        pid=4242,
        hostname=host,
        metadata=metadata,
    )
    if silent_for:
        Process.objects.filter(pk=process.pk).update(
            last_heartbeat_at=timezone.now() - timedelta(seconds=silent_for)
        )
    return process


def run(thresholds: health.Thresholds | None = None, **config: object) -> health.Report:
    return health.check(
        SupervisorConfig(database="default", **config),  # type: ignore[arg-type]
        thresholds or health.Thresholds(),
    )


def outcome(report: health.Report) -> dict[str, bool]:
    return {check.name: check.ok for check in report.checks}


def detail(report: health.Report, name: str) -> str:
    return next(check.detail for check in report.checks if check.name == name)


class HealthyTests(TestCase):
    @override_settings(ROBUST_QUEUE=QUIET_SERVER)
    def test_a_live_supervisor_and_worker_are_healthy(self) -> None:
        register(ProcessKind.SUPERVISOR)
        register(ProcessKind.WORKER, queues=["*"])
        tasks.add.enqueue(1, 2)
        report = run()
        self.assertIs(report.healthy, True, report.as_dict())
        self.assertEqual(
            list(outcome(report)),
            [
                "database",
                "migrations",
                "supervisor",
                "heartbeats",
                "children",
                "queues",
                "dead_tuples",
                "transactions",
            ],
        )
        self.assertEqual(report.warnings, [])

    def test_the_report_as_json_data(self) -> None:
        report = run(health.Thresholds(check_supervisor=False))
        data = report.as_dict()
        self.assertIs(data["healthy"], True)
        self.assertEqual(data["checks"][0]["name"], "database")
        self.assertEqual(set(data["checks"][0]), {"name", "ok", "detail"})


class SupervisorCheckTests(TestCase):
    def test_no_supervisor_on_this_host_fails_naming_the_threshold(self) -> None:
        register(ProcessKind.SUPERVISOR, host="another-host")
        report = run(alive_threshold=120.0)
        self.assertIs(outcome(report)["supervisor"], False)
        self.assertIn(
            f"no supervisor on {HERE} has heartbeaten within 120s", detail(report, "supervisor")
        )

    def test_a_silent_supervisor_is_not_alive(self) -> None:
        register(ProcessKind.SUPERVISOR, silent_for=600)
        self.assertIs(outcome(run())["supervisor"], False)

    def test_the_alive_threshold_decides_what_is_silent(self) -> None:
        register(ProcessKind.SUPERVISOR, silent_for=90)
        self.assertIs(outcome(run(alive_threshold=300.0))["supervisor"], True)
        self.assertIs(
            outcome(run(alive_threshold=60.0, heartbeat_interval=30.0))["supervisor"], False
        )

    def test_a_host_that_only_enqueues_skips_the_supervisor(self) -> None:
        report = run(health.Thresholds(check_supervisor=False))
        self.assertNotIn("supervisor", outcome(report))
        self.assertIs(report.healthy, True)


class PidfileTests(TestCase):
    def pidfile(self, text: str | None) -> str:
        path = Path(tempfile.mkdtemp()) / "rq.pid"
        if text is not None:
            path.write_text(text)
        return str(path)

    def test_a_live_pid_is_a_live_supervisor(self) -> None:
        path = self.pidfile(f"{os.getpid()}\n")
        report = run(pidfile=path)
        self.assertIs(outcome(report)["supervisor"], True)
        self.assertIn(f"supervisor pid {os.getpid()}", detail(report, "supervisor"))

    def test_a_pid_that_is_gone_is_named(self) -> None:
        report = run(pidfile=self.pidfile("999999\n"))
        self.assertIs(outcome(report)["supervisor"], False)
        self.assertIn("(pid 999999) is gone", detail(report, "supervisor"))

    def test_no_pidfile_is_no_supervisor(self) -> None:
        path = self.pidfile(None)
        report = run(pidfile=path)
        self.assertEqual(detail(report, "supervisor"), f"no supervisor pid in {path}")


class HeartbeatCheckTests(TestCase):
    def test_a_silent_process_of_this_host_fails(self) -> None:
        register(ProcessKind.SUPERVISOR)
        stale = register(ProcessKind.WORKER, silent_for=3600)
        report = run()
        self.assertIs(outcome(report)["heartbeats"], False)
        self.assertIn(f"worker {stale.name} (pid 4242)", detail(report, "heartbeats"))

    @override_settings(ROBUST_QUEUE=QUIET_SERVER)
    def test_a_silent_process_elsewhere_is_a_warning_only(self) -> None:
        register(ProcessKind.SUPERVISOR)
        stale = register(ProcessKind.WORKER, host="gone-host", silent_for=3600)
        report = run()
        self.assertIs(report.healthy, True)
        self.assertEqual(len(report.warnings), 1)
        self.assertIn(f"{stale.name} on gone-host", report.warnings[0])
        self.assertIn("it will be pruned", report.warnings[0])


class QueueCheckTests(TestCase):
    def setUp(self) -> None:
        register(ProcessKind.SUPERVISOR)

    def test_ready_jobs_without_a_worker_for_their_queue_fail_by_name(self) -> None:
        register(ProcessKind.WORKER, queues=["default"])
        tasks.add.using(queue_name="mail").enqueue(1, 2)
        tasks.add.using(queue_name="mail_bulk").enqueue(1, 2)
        tasks.add.enqueue(1, 2)
        report = run()
        self.assertIs(outcome(report)["queues"], False)
        self.assertEqual(
            detail(report, "queues"), "ready jobs and no live worker for queue(s): mail, mail_bulk"
        )

    def test_a_prefix_selector_covers_its_queues(self) -> None:
        register(ProcessKind.WORKER, queues=["mail*"])
        tasks.add.using(queue_name="mail_bulk").enqueue(1, 2)
        self.assertIs(outcome(run())["queues"], True)

    def test_a_paused_queue_needs_no_worker(self) -> None:
        tasks.add.using(queue_name="mail").enqueue(1, 2)
        Pause.objects.create(queue_name="mail")
        self.assertIs(outcome(run())["queues"], True)

    def test_a_silent_worker_covers_nothing(self) -> None:
        register(ProcessKind.WORKER, silent_for=3600, queues=["*"])
        tasks.add.enqueue(1, 2)
        self.assertIs(outcome(run())["queues"], False)

    def test_require_workers_without_a_queue_wants_any_live_worker(self) -> None:
        report = run(health.Thresholds(require_workers=True))
        self.assertEqual(detail(report, "workers"), "no live worker")
        register(ProcessKind.WORKER, queues=["*"])
        self.assertEqual(
            detail(run(health.Thresholds(require_workers=True)), "workers"), "1 live worker(s)"
        )

    def test_require_workers_names_the_queues_nobody_polls(self) -> None:
        register(ProcessKind.WORKER, queues=["default"])
        thresholds = health.Thresholds(require_workers=True, queues=("default", "mail"))
        report = run(thresholds)
        self.assertEqual(detail(report, "workers"), "no live worker polls queue(s): mail")

    def test_max_latency_names_the_late_queues(self) -> None:
        register(ProcessKind.WORKER, queues=["*"])
        late = tasks.add.using(queue_name="mail").enqueue(1, 2)
        tasks.add.enqueue(3, 4)
        # A queue's latency is the age of its oldest ready row.
        ReadyExecution.objects.filter(job__result_id=late.id).update(
            created_at=timezone.now() - timedelta(hours=1)
        )
        report = run(health.Thresholds(max_latency=60))
        self.assertIs(outcome(report)["latency"], False)
        self.assertRegex(
            detail(report, "latency"), r"^oldest ready job older than 60s in: mail \(\d+s\)$"
        )


class CoversTests(SimpleTestCase):
    def test_selectors_from_a_worker_row(self) -> None:
        self.assertIs(health.covers(["*"], "any"), True)
        self.assertIs(health.covers(["mail*"], "mail_bulk"), True)
        self.assertIs(health.covers("mail", "mail"), True)
        self.assertIs(health.covers(["mail"], "mail_bulk"), False)

    def test_a_malformed_row_covers_nothing(self) -> None:
        self.assertIs(health.covers(None, "mail"), False)
        self.assertIs(health.covers({"queues": "*"}, "mail"), False)
        self.assertIs(health.covers([3, None], "mail"), False)
