"""One clock: times other hosts compare against come from the database.

The app host's clock is skewed here by patching ``timezone.now`` in this
process; the database server's clock is untouched. On SQLite the database
runs in this process, so its clock *is* the host's and skew cannot apply.
"""

from __future__ import annotations

import threading
import unittest
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from unittest import mock

from django.db import connection
from django.test import TestCase
from django.utils import timezone

from robust_queue.models import (
    BlockedExecution,
    Process,
    ProcessKind,
    ReadyExecution,
    RecurringExecution,
    RecurringTask,
    ScheduledExecution,
    Semaphore,
)
from robust_queue.models.clock import database_now
from robust_queue.processes.registration import Heartbeat
from robust_queue.processes.scheduler import Scheduler
from testproject import control_tasks as ct
from testproject import tasks

SKEW = timedelta(minutes=10)
# The test process and the database server share this machine's clock.
CLOSE = timedelta(seconds=5)


@contextmanager
def host_clock(offset: timedelta) -> Iterator[None]:
    """Run the block on a host whose clock is ``offset`` off."""
    real_now = timezone.now
    with mock.patch("django.utils.timezone.now", lambda: real_now() + offset):
        yield


def register(name: str) -> Process:
    return Process.objects.register(kind=ProcessKind.WORKER, name=name, pid=1)


class DatabaseNowTests(TestCase):
    def test_database_now_is_aware_and_keeps_microseconds(self) -> None:
        """database_now() is the server's time, aware, to the microsecond."""
        values = [database_now("default") for _ in range(5)]
        self.assertTrue(all(timezone.is_aware(value) for value in values))
        self.assertTrue(any(value.microsecond % 1000 for value in values))
        self.assertLess(abs(values[0] - timezone.now()), CLOSE)

    def test_rows_stamped_by_the_database_keep_microseconds(self) -> None:
        """A heartbeat written with DatabaseNow() keeps its microseconds."""
        stamps = [register(f"p{i}").last_heartbeat_at for i in range(5)]
        self.assertTrue(any(stamp.microsecond % 1000 for stamp in stamps))

    def test_a_time_written_a_moment_ago_is_already_past(self) -> None:
        """A Python-written time compares right against the database's now."""
        process = register("p")
        Process.objects.filter(pk=process.pk).update(last_heartbeat_at=timezone.now())
        self.assertEqual(list(Process.objects.stale(0)), [process])

    @unittest.skipUnless(connection.vendor == "mysql", "MySQL/MariaDB session time zones")
    def test_mysql_now_is_utc_whatever_the_session_time_zone(self) -> None:
        """On MySQL/MariaDB the database's now is UTC, as Django stores it."""
        with connection.cursor() as cursor:
            cursor.execute("SET time_zone = '+05:00'")
        try:
            self.assertLess(abs(database_now("default") - timezone.now()), CLOSE)
            self.assertFalse(Process.objects.filter(pk=register("p").pk).stale(60).exists())
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SET time_zone = '+00:00'")


@unittest.skipIf(connection.vendor == "sqlite", "SQLite's clock is the host's")
class SkewedHostTests(TestCase):
    def test_heartbeats_are_written_with_the_database_clock(self) -> None:
        """A host's clock skew shows neither in its row nor in its beats."""
        with host_clock(SKEW):
            process = register("fast")
            self.assertLess(abs(process.last_heartbeat_at - database_now("default")), CLOSE)
            Heartbeat(process, 60, lambda: None).beat()
        process.refresh_from_db()
        self.assertLess(abs(process.last_heartbeat_at - database_now("default")), CLOSE)

    def test_a_fast_host_does_not_find_live_processes_stale(self) -> None:
        """A host 10 min ahead does not prune a process that beat just now."""
        with host_clock(-SKEW):
            register("slow")
        with host_clock(SKEW):
            self.assertFalse(Process.objects.stale(60).exists())

    def test_a_dead_fast_host_goes_stale(self) -> None:
        """Heartbeats of a host 10 min ahead do not lie in the future."""
        with host_clock(SKEW):
            process = register("fast")
        threading.Event().wait(0.01)
        self.assertEqual(list(Process.objects.stale(0)), [process])

    def test_a_fast_dispatcher_does_not_run_delayed_jobs_early(self) -> None:
        """A scheduled job is due by the database's clock, not the host's."""
        tasks.add.using(run_after=database_now("default") + timedelta(minutes=1)).enqueue(1, 2)
        with host_clock(SKEW):
            self.assertEqual(ScheduledExecution.objects.dispatch_next_batch(10), 0)
        self.assertEqual(ScheduledExecution.objects.count(), 1)

    def test_a_fast_host_schedules_a_future_run_after(self) -> None:
        """Enqueue decides scheduled/ready by the database's clock."""
        run_after = database_now("default") + timedelta(minutes=1)
        with host_clock(SKEW):
            tasks.add.using(run_after=run_after).enqueue(1, 2)
        self.assertEqual(ScheduledExecution.objects.count(), 1)
        self.assertFalse(ReadyExecution.objects.exists())

    def test_a_slow_host_makes_a_past_run_after_ready(self) -> None:
        """A run_after already past by the database's clock is ready at once."""
        run_after = database_now("default") - timedelta(seconds=1)
        with host_clock(-SKEW):
            tasks.add.using(run_after=run_after).enqueue(1, 2)
        self.assertEqual(ReadyExecution.objects.count(), 1)
        self.assertFalse(ScheduledExecution.objects.exists())

    def test_leases_of_a_slow_host_do_not_expire_at_once(self) -> None:
        """Semaphore and blocked leases run from the database's now."""
        with host_clock(-SKEW):
            for label in ("a", "b", "c"):
                ct.limited.enqueue("acct", label)
        self.assertEqual(BlockedExecution.objects.count(), 1)
        self.assertFalse(Semaphore.objects.expired().exists())
        self.assertEqual(BlockedExecution.objects.release_all_with_room(), 0)
        self.assertEqual(ReadyExecution.objects.count(), 2)

    def test_a_fast_scheduler_enqueues_no_slot_before_its_time(self) -> None:
        """Recurring slots are due by the database's clock."""
        RecurringTask.objects.create(
            key="every-minute",
            schedule="* * * * *",
            task_path="testproject.tasks.add",
            arguments={"args": [1, 2], "kwargs": {}},
            static=False,
        )
        scheduler = Scheduler(using="default")
        scheduler.boot()
        with host_clock(SKEW):
            scheduler.run_once()
        slots: list[datetime] = list(RecurringExecution.objects.values_list("run_at", flat=True))
        self.assertTrue(all(slot <= database_now("default") for slot in slots), slots)
