"""One clock for readers too: liveness and latency are judged on the
database's clock wherever they are shown — the health check, the admin's
processes page, the metrics — not on the reading host's.

The reading host's clock is skewed by patching ``timezone.now`` in this
process (see test_clock.py); on SQLite the database's clock is this
process's, so skew cannot apply there.
"""

from __future__ import annotations

import os
import socket
import unittest
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import connection
from django.test import TestCase
from django.urls import reverse

from robust_queue.metrics.collect import collect
from robust_queue.models import Process, ProcessKind, Queue
from robust_queue.models.clock import database_now
from robust_queue.operations import health
from robust_queue.processes.config import SupervisorConfig
from testproject import tasks

from .test_clock import SKEW, host_clock

THRESHOLD = 300.0
# Heartbeats this old are stale by the database's clock (threshold 5 min)
# but look fresh to a host 10 min behind.
SILENT = timedelta(minutes=6)


def supervisor(silent_for: timedelta = timedelta(0)) -> Process:
    process = Process.objects.register(
        kind=ProcessKind.SUPERVISOR,
        name="supervisor-here",
        pid=os.getpid(),
        hostname=socket.gethostname(),
        metadata={"queues": ["*"]},
    )
    if silent_for:
        Process.objects.filter(pk=process.pk).update(
            last_heartbeat_at=database_now("default") - silent_for
        )
    return process


def samples(name: str) -> list[tuple[dict[str, str], float]]:
    return [
        (dict(labels), value)
        for family in collect("default")
        for sample_name, labels, value in family.samples
        if sample_name == name
    ]


def health_checks() -> dict[str, bool]:
    report = health.check(
        SupervisorConfig(alive_threshold=THRESHOLD), health.Thresholds(max_latency=60)
    )
    return {check.name: check.ok for check in report.checks}


@unittest.skipIf(connection.vendor == "sqlite", "SQLite's clock is the host's")
class LivenessReadersTests(TestCase):
    def test_alive_and_stale_follow_the_database_clock(self) -> None:
        """A fast host sees a fresh process alive; a slow one sees a
        silent one stale."""
        fresh, silent = supervisor(), supervisor(SILENT)
        Process.objects.filter(pk=silent.pk).update(name="silent")
        for offset in (SKEW, -SKEW):
            with self.subTest(offset=offset), host_clock(offset):
                self.assertEqual(list(Process.objects.alive(THRESHOLD)), [fresh])
                self.assertEqual(list(Process.objects.stale(THRESHOLD)), [silent])

    def test_health_on_a_fast_host_finds_its_live_supervisor(self) -> None:
        supervisor()
        with host_clock(SKEW):
            self.assertIs(health_checks()["supervisor"], True)

    def test_health_on_a_slow_host_finds_a_silent_supervisor_dead(self) -> None:
        supervisor(SILENT)
        with host_clock(-SKEW):
            self.assertIs(health_checks()["supervisor"], False)

    def test_metrics_count_live_processes_by_the_database_clock(self) -> None:
        supervisor()
        with host_clock(SKEW):
            self.assertEqual(
                samples("robust_queue_processes"),
                [({"kind": "supervisor", "host": socket.gethostname()}, 1)],
            )
        Process.objects.update(last_heartbeat_at=database_now("default") - SILENT)
        with host_clock(-SKEW):
            self.assertEqual(samples("robust_queue_processes"), [])


@unittest.skipIf(connection.vendor == "sqlite", "SQLite's clock is the host's")
class ProcessesPageTests(TestCase):
    def setUp(self) -> None:
        admin = User.objects.create_superuser("admin", password="pw")
        self.client.force_login(admin)

    def page(self) -> Any:
        return self.client.get(reverse("admin:robust_queue_process_changelist"))

    def test_a_fast_host_does_not_flag_a_live_process(self) -> None:
        supervisor()
        with host_clock(SKEW):
            response = self.page()
        self.assertNotContains(response, "rq-stale")
        self.assertNotContains(response, "10 min")

    def test_a_slow_host_flags_a_silent_process(self) -> None:
        supervisor(SILENT)
        with host_clock(-SKEW):
            response = self.page()
        self.assertContains(response, "rq-stale")
        self.assertContains(response, "6 min ago")


@unittest.skipIf(connection.vendor == "sqlite", "SQLite's clock is the host's")
class LatencyReadersTests(TestCase):
    def test_latency_is_measured_on_the_database_clock(self) -> None:
        """A job enqueued just now has waited seconds, not the reading
        host's 10 minutes of skew."""
        tasks.add.enqueue(1, 2)
        with host_clock(SKEW):
            self.assertLess(Queue("default").latency(), timedelta(seconds=30))
            [(labels, seconds)] = samples("robust_queue_queue_latency_seconds")
            self.assertEqual(labels, {"queue": "default"})
            self.assertLess(seconds, 30)
            supervisor()
            self.assertIs(health_checks()["latency"], True)

    def test_an_empty_queue_has_no_latency(self) -> None:
        self.assertEqual(Queue("default").latency(), timedelta(0))
