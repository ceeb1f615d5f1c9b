"""A large retention pass never holds up the supervisor (issue 25 §1).

A database that holds hundreds of thousands of finished jobs older than
``clear_finished_jobs_after`` (a first start after weeks without
retention) used to be cleared in one loop inside the supervisor's tick:
minutes without a heartbeat, without replacing a dead child, deaf to TERM.
"""

from __future__ import annotations

import os
import signal
import time
from datetime import timedelta

import django
from django.db import connection
from django.test import TransactionTestCase
from django.utils import timezone

from robust_queue.models import Job, Process
from tests.helpers import wait_until

from .support import FAST, Supervisor, elapsed_since

# The scale where it asked for it: PostgreSQL and MariaDB, on the
# 311 line (Django 5.2). Elsewhere (SQLite, Django 6.x) 50,000: at one
# batch of 500 a tick, the first pass needs 50 s or more, several times the
# test's wait for TERM, so the same slices and log lines in a tenth of the time.
OLD_JOBS = 500_000 if connection.vendor != "sqlite" and django.VERSION < (6, 0) else 50_000
COLUMNS = (
    "result_id, task_path, queue_name, priority, backend_alias, arguments, "
    "concurrency_key, rate_key, enqueued_at, started_at, last_attempted_at, "
    "finished_at, worker_ids, errors, return_value, metadata, snoozes"
)
# 1..{count} as rows of one column n (MariaDB's Sequence engine: its
# recursive CTEs stop at max_recursive_iterations, 1000 here).
NUMBERS = {
    "postgresql": "generate_series(1, {count}) AS numbers (n)",
    "mysql": "(SELECT seq AS n FROM seq_1_to_{count}) AS numbers",
    "sqlite": "(WITH RECURSIVE numbers (n) AS (SELECT 1 UNION ALL SELECT n + 1 "
    "FROM numbers WHERE n < {count}) SELECT n FROM numbers) AS numbers",
}
# What the supervisor logs as it starts clearing them.
CLEARING = f"Clearing {OLD_JOBS} finished job(s) older than 1 day"


def insert_old_finished_jobs(count: int) -> None:
    """``count`` jobs that finished three days ago, in one statement."""
    result_id = "CONCAT('old-', n)" if connection.vendor == "mysql" else "'old-' || n"
    when = connection.ops.adapt_datetimefield_value(timezone.now() - timedelta(days=3))
    sql = (
        f"INSERT INTO robust_queue_job ({COLUMNS}) SELECT {result_id}, "
        "'testproject.tasks.add', 'default', 0, 'default', '[1, 2]', '', '', "
        "%s, %s, %s, %s, '[\"old-worker\"]', '[]', '3', '{}', 0 "
        f"FROM {NUMBERS[connection.vendor].format(count=int(count))}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [when, when, when, when])


def old_jobs_remain() -> bool:
    # exists(), not count(): polled while the supervisor deletes.
    return Job.objects.filter(result_id__startswith="old-").exists()


class LargeRetentionPassTests(TransactionTestCase):
    def setUp(self) -> None:
        insert_old_finished_jobs(OLD_JOBS)
        self.assertEqual(Job.objects.count(), OLD_JOBS)

    def heartbeats(self, supervisor: Supervisor, count: int) -> None:
        """Wait until the supervisor's heartbeat has advanced ``count``
        times (the fixture beats every 0.5 s)."""
        seen: list[object] = []

        def beat() -> bool:
            row = Process.objects.get(kind="supervisor", pid=supervisor.pid)
            if not seen or row.last_heartbeat_at != seen[-1]:
                seen.append(row.last_heartbeat_at)
            return len(seen) > count

        wait_until(beat, timeout=15)

    def test_the_supervisor_beats_replaces_and_stops_while_clearing(self) -> None:
        """While a pass over OLD_JOBS old jobs runs, the supervisor
        heartbeats, replaces a killed worker and honours TERM within the
        shutdown timeout; the next supervisor clears the rest."""
        # A tiny budget keeps the first pass running for the whole test,
        # however fast the database deletes: one batch (500 rows) a tick.
        supervisor = Supervisor(self, maintenance_interval=0.5, maintenance_budget=0.001)
        wait_until(lambda: CLEARING in supervisor.output(), timeout=60)
        self.heartbeats(supervisor, 3)
        worker = supervisor.children("worker")[0]
        os.kill(worker.pid, signal.SIGKILL)
        replaced = Process.objects.filter(kind="worker", supervisor__pid=supervisor.pid)
        wait_until(lambda: replaced.exclude(pid=worker.pid).exists(), timeout=20)
        self.assertIs(old_jobs_remain(), True, "the pass still runs")
        stopping = time.monotonic()
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=30), 0)
        self.assertLess(elapsed_since(stopping), FAST["shutdown_timeout"] + 2)
        self.assertIs(old_jobs_remain(), True, "the pass was stopped part way")
        self.assertIn("stopped after", supervisor.output())
        # The default budget: the next supervisor clears everything left.
        second = Supervisor(self, maintenance_interval=0.5)
        wait_until(lambda: not old_jobs_remain(), timeout=600, interval=0.5)
        wait_until(lambda: "Cleared" in second.output(), timeout=10)
