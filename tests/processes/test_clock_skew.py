"""Supervisors on hosts whose clocks are 10 minutes off (libfaketime).

Each skewed supervisor is a real ``manage.py robust_queue`` subprocess
with libfaketime preloaded; its monotonic clock stays real so its loops
and waits behave. The database server's clock is the reference. SQLite
runs inside each process, so there every process has its own clock and
the rule cannot apply.
"""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import time
import unittest
from datetime import timedelta
from typing import Any
from unittest import mock

from django.db import connection
from django.test import TransactionTestCase

from robust_queue.models import Job, Process, ScheduledExecution
from robust_queue.models.clock import database_now
from testproject import control_tasks as ct
from testproject import tasks
from tests.helpers import wait_until

from .support import Supervisor, is_alive

LIBFAKETIME = next(iter(sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))), None)
SKEW = 600


def faked(offset: int) -> dict[str, str]:
    """Environment that runs a process with its clock ``offset`` s off."""
    assert LIBFAKETIME is not None
    return {
        "LD_PRELOAD": LIBFAKETIME,
        "FAKETIME": f"{offset:+d}s",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }


def skewed(test: TransactionTestCase, offset: int, *args: str, **options: Any) -> Supervisor:
    with mock.patch.dict(os.environ, faked(offset)):
        return Supervisor(test, *args, **options)


@unittest.skipIf(connection.vendor == "sqlite", "SQLite's clock is each process's own")
class ClockSkewTests(TransactionTestCase):
    def setUp(self) -> None:
        if LIBFAKETIME is None:
            self.fail("libfaketime is missing: apt-get install faketime (scripts/system-deps.sh)")

    def test_faketime_skews_python_clocks_but_not_monotonic(self) -> None:
        """Sanity check: the preload moves time.time and datetime.now."""
        code = (
            "import time, datetime; print(time.time(), "
            "datetime.datetime.now(datetime.timezone.utc).timestamp(), time.monotonic())"
        )
        for offset in (SKEW, -SKEW):
            out = subprocess.run(
                [sys.executable, "-c", code],
                env={**os.environ, **faked(offset)},
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            wall, now, monotonic = (float(value) for value in out)
            self.assertAlmostEqual(wall - time.time(), offset, delta=30)
            self.assertAlmostEqual(now - time.time(), offset, delta=30)
            self.assertAlmostEqual(monotonic, time.monotonic(), delta=30)

    def test_skewed_hosts_prune_only_dead_processes(self) -> None:
        """Hosts 10 min ahead and behind prune no live process; a killed
        host is pruned whichever way its clock was off."""
        # A 5 s alive threshold: a skew of 10 min would show at the first
        # prune (every heartbeat, 0.5 s), and a dead host goes soon.
        threshold = {"process_alive_threshold": 5}
        normal = Supervisor(self, **threshold)
        fast, slow = skewed(self, SKEW, **threshold), skewed(self, -SKEW, **threshold)
        groups = {sup: self._processes_of(sup) for sup in (normal, fast, slow)}
        deadline = time.monotonic() + 7
        while time.monotonic() < deadline:
            for sup, pks in groups.items():
                self.assertTrue(is_alive(sup.pid), sup.output())
                alive = set(Process.objects.filter(pk__in=pks).values_list("pk", flat=True))
                self.assertEqual(alive, pks, sup.output())
            time.sleep(0.25)
        for dead in (fast, slow):
            self._kill_hard(dead)
            wait_until(
                lambda dead=dead: not Process.objects.filter(pk__in=groups[dead]).exists(), 60
            )
        self.assertTrue(is_alive(normal.pid))

    def test_a_fast_host_runs_no_delayed_task_early(self) -> None:
        """Delayed tasks wait for their time by the database's clock."""
        self._delayed_tasks_run_on_time(SKEW)

    def test_a_slow_host_runs_delayed_tasks_on_time(self) -> None:
        """A host 10 min behind does not hold delayed tasks back."""
        self._delayed_tasks_run_on_time(-SKEW)

    def _delayed_tasks_run_on_time(self, offset: int) -> None:
        supervisor = skewed(self, offset)
        supervisor.children("dispatcher")
        supervisor.children("worker")
        run_after = database_now("default") + timedelta(seconds=5)
        ids = [tasks.add.using(run_after=run_after).enqueue(i, 1).id for i in range(20)]
        jobs = Job.objects.filter(result_id__in=ids)
        # Until run_after (minus this poll's own latency), none has moved.
        while database_now("default") < run_after - timedelta(seconds=0.2):
            self.assertEqual(ScheduledExecution.objects.count(), 20, supervisor.output())
            time.sleep(0.1)
        wait_until(lambda: jobs.filter(finished_at__isnull=False).count() == 20, 60)

    def test_a_fast_host_schedules_retries_by_the_database_clock(self) -> None:
        """A retry's back-off counts from the database's clock: a worker
        10 min ahead does not put the retry 10 min late."""
        self._retry_is_due_after_its_backoff(SKEW)

    def test_a_slow_host_schedules_retries_by_the_database_clock(self) -> None:
        """A worker 10 min behind does not retry at once."""
        self._retry_is_due_after_its_backoff(-SKEW)

    def _retry_is_due_after_its_backoff(self, offset: int) -> None:
        supervisor = skewed(self, offset, task_modules=["testproject.control_tasks"])
        supervisor.children("worker")
        # picky retries a ValueError after 30 s (+/- 15% jitter).
        result_id = ct.picky.enqueue("value").id
        job = Job.objects.filter(result_id=result_id)
        wait_until(lambda: job.get().errors != [], 60)
        now = database_now("default")
        due = job.get().run_after
        self.assertIsNotNone(due, supervisor.output())
        self.assertGreater(due, now + timedelta(seconds=15), supervisor.output())
        self.assertLess(due, now + timedelta(seconds=40), supervisor.output())
        self.assertEqual(ScheduledExecution.objects.get().job.result_id, result_id)

    def _kill_hard(self, supervisor: Supervisor) -> None:
        pids = [p.pid for p in Process.objects.filter(supervisor__pid=supervisor.pid)]
        for pid in [supervisor.pid, *pids]:
            os.kill(pid, signal.SIGKILL)
        supervisor.wait(timeout=10)

    def _processes_of(self, supervisor: Supervisor) -> set[int]:
        children = supervisor.children("worker") + supervisor.children("dispatcher")
        return {child.pk for child in children} | {children[0].supervisor_id}
