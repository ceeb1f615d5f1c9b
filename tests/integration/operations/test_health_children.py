"""`health` checks that each live supervisor of this host runs its
configured children and that none stopped heartbeating, whatever the
queues hold."""

from __future__ import annotations

import os
import socket
from datetime import timedelta

from django.test import TestCase
from django.utils import timezone

from robust_queue.models import Process, ProcessKind
from robust_queue.operations import health
from robust_queue.processes.config import SupervisorConfig

CHILDREN = {"heartbeat_interval": 1, "children": {"worker": 1, "dispatcher": 1}}


def register(
    kind: str, *, supervisor: Process | None = None, age: float = 0, **fields: object
) -> Process:
    fields = {"hostname": socket.gethostname(), **fields}
    process = Process.objects.create(
        kind=kind,
        name=f"{kind}-{Process.objects.count()}",
        pid=os.getpid(),
        supervisor=supervisor,
        **fields,
    )
    beat = timezone.now() - timedelta(seconds=age)
    Process.objects.filter(pk=process.pk).update(last_heartbeat_at=beat)
    return process


def children_check() -> tuple[bool, str]:
    report = health.check(SupervisorConfig(database="default"), health.Thresholds())
    [check] = [c for c in report.checks if c.name == "children"]
    return check.ok, check.detail


class HealthChildrenTests(TestCase):
    def supervisor(self, **fields: object) -> Process:
        return register(ProcessKind.SUPERVISOR, metadata={"mode": "fork", **CHILDREN}, **fields)

    def test_a_supervisor_with_its_children_is_healthy(self) -> None:
        supervisor = self.supervisor()
        register(ProcessKind.WORKER, supervisor=supervisor)
        register(ProcessKind.DISPATCHER, supervisor=supervisor, age=2)
        self.assertEqual(children_check()[0], True)

    def test_a_missing_worker_fails_with_empty_queues(self) -> None:
        supervisor = self.supervisor()
        register(ProcessKind.DISPATCHER, supervisor=supervisor)
        ok, detail = children_check()
        self.assertIs(ok, False)
        self.assertIn(f"(pid {supervisor.pid}) runs 0 of its 1 worker(s)", detail)

    def test_a_worker_late_by_three_beats_fails_before_it_is_pruned(self) -> None:
        supervisor = self.supervisor()
        worker = register(ProcessKind.WORKER, supervisor=supervisor, age=5)
        register(ProcessKind.DISPATCHER, supervisor=supervisor)
        ok, detail = children_check()
        self.assertIs(ok, False)
        self.assertIn(f"worker {worker.name} (pid {worker.pid}) has not heartbeaten for 5s", detail)

    def test_supervisors_of_other_hosts_and_older_rows_are_not_judged(self) -> None:
        """Another host's health judges its own; a row without the
        ``children`` metadata (an older version) says nothing to compare."""
        self.supervisor(hostname="elsewhere")
        register(ProcessKind.SUPERVISOR, metadata={"mode": "fork"})
        self.assertEqual(children_check()[0], True)
