"""A process's heartbeat: beating on time, noticing it was pruned, and
riding out a lost database session (the real database, no stand-ins)."""

from __future__ import annotations

import threading
from datetime import timedelta
from unittest import skipIf

from django.db import connection, connections
from django.test import TestCase, TransactionTestCase
from django.utils import timezone

from robust_queue.models import Process, ProcessKind
from robust_queue.processes.registration import Heartbeat
from tests.helpers import wait_until

# The heartbeat (registration.py) and the outage report (outage.py) log.
LOGGER = "robust_queue.processes"


def register(name: str = "w") -> Process:
    return Process.objects.register(kind=ProcessKind.WORKER, name=name, pid=1)


def silence(process: Process) -> None:
    Process.objects.filter(pk=process.pk).update(
        last_heartbeat_at=timezone.now() - timedelta(hours=1)
    )


def beating(process: Process) -> bool:
    """Whether the heartbeat thread of ``process`` runs."""
    return any(t.name == f"heartbeat-{process.name}" for t in threading.enumerate())


def is_stale(process: Process) -> bool:
    return Process.objects.filter(pk=process.pk).stale(60).exists()


class BeatIfDueTests(TestCase):
    """The supervisor's way: its loop calls ``beat_if_due()``."""

    def setUp(self) -> None:
        self.process = register()
        self.lost: list[bool] = []

    def heartbeat(self, interval: float) -> Heartbeat:
        return Heartbeat(self.process, interval, lambda: self.lost.append(True))

    def test_nothing_is_written_before_the_interval(self) -> None:
        heartbeat = self.heartbeat(60)
        silence(self.process)
        heartbeat.beat_if_due()
        self.assertIs(is_stale(self.process), True)

    def test_a_due_beat_refreshes_the_row(self) -> None:
        heartbeat = self.heartbeat(0)
        silence(self.process)
        heartbeat.beat_if_due()
        self.assertIs(is_stale(self.process), False)
        self.assertGreater(heartbeat.healthy_for(), 0)
        self.assertEqual(self.lost, [])

    def test_a_pruned_row_is_reported_lost(self) -> None:
        heartbeat = self.heartbeat(0)
        Process.objects.filter(pk=self.process.pk).delete()
        with self.assertLogs(LOGGER, "WARNING") as logs:
            heartbeat.beat_if_due()
        self.assertEqual(self.lost, [True])
        self.assertIn("is no longer registered (pruned)", logs.output[0])

    def test_a_failure_elsewhere_brings_the_next_beat_forward(self) -> None:
        """The work loop reports a database error: the beat comes within
        RETRY, not after a whole interval."""
        heartbeat = self.heartbeat(3600)
        heartbeat.RETRY = 0.05
        with self.assertLogs(LOGGER, "WARNING"):
            heartbeat.failed(ConnectionError("gone"), doing="Work")
        wait_until(lambda: (heartbeat.beat_if_due(), heartbeat.healthy_for() > 0)[1], timeout=5)


class HeartbeatThreadTests(TransactionTestCase):
    """A child's way: a thread beats every interval."""

    def test_it_beats_until_its_row_is_gone_then_reports_it_once(self) -> None:
        process = register()
        lost = threading.Event()
        calls: list[bool] = []

        def on_lost() -> None:
            calls.append(True)
            lost.set()

        heartbeat = Heartbeat(process, 0.05, on_lost)
        silence(process)
        heartbeat.start()
        self.addCleanup(heartbeat.stop)
        wait_until(lambda: not is_stale(process), timeout=30)
        process.deregister()
        self.assertIs(lost.wait(30), True)
        heartbeat.stop()
        self.assertEqual(calls, [True])
        self.assertIs(beating(process), False)

    def test_stop_ends_the_thread_without_reporting_a_loss(self) -> None:
        process = register()
        calls: list[bool] = []
        heartbeat = Heartbeat(process, 0.05, lambda: calls.append(True))
        heartbeat.start()
        heartbeat.stop()
        self.assertIs(beating(process), False)
        self.assertEqual(calls, [])


def end_session(alias: str, killer: str) -> None:
    """End ``alias``'s server session from ``killer``'s, as a failover would."""
    with connections[alias].cursor() as cursor:
        postgresql = connection.vendor == "postgresql"
        cursor.execute("SELECT pg_backend_pid()" if postgresql else "SELECT CONNECTION_ID()")
        [session] = cursor.fetchone()
    with connections[killer].cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_terminate_backend(%s)", [session])
        else:
            cursor.execute(f"KILL {int(session)}")


@skipIf(connection.vendor == "sqlite", "SQLite has no server session to lose")
class HeartbeatOutageTests(TransactionTestCase):
    databases = {"default", "queue"}

    def test_a_failed_beat_warns_once_is_retried_and_recovers(self) -> None:
        """The outage is counted once (other threads' connections died
        with it); the row is refreshed once the database answers."""
        process = register()
        lost: list[bool] = []
        heartbeat = Heartbeat(process, 0, lambda: lost.append(True))
        end_session("default", "queue")
        with self.assertLogs(LOGGER, "WARNING") as logs:
            heartbeat.beat_if_due()
        self.assertIn(f"Heartbeat of {process.name} failed", logs.output[0])
        self.assertEqual((heartbeat.outages, heartbeat.healthy_for()), (1, 0.0))
        end_session("default", "queue")
        with self.assertNoLogs(LOGGER, "WARNING"):
            heartbeat.beat_if_due()
        self.assertEqual(heartbeat.outages, 1)
        silence(process)
        with self.assertLogs(LOGGER, "INFO") as logs:
            heartbeat.beat_if_due()
        self.assertIn(f"{process.name} reaches the database again", logs.output[0])
        self.assertIs(is_stale(process), False)
        self.assertGreater(heartbeat.healthy_for(), 0)
        self.assertEqual(lost, [])
