"""The real supervisor behind a real PgBouncer in transaction pooling.

Every statement of the supervisor and its children goes through a
PgBouncer of the test's own (``pgbouncer.py``), whose few server sessions
each serve many clients: session state would leak or be lost. The ledger
proves every job ran exactly once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from unittest import skipIf

from django.db import connection
from django.db.models import Count
from django.test import TransactionTestCase

from robust_queue.models import Job
from testproject import tasks
from testproject.models import LedgerEntry
from tests.helpers import wait_until

from .pgbouncer import PgBouncer, assert_each_ran_at_most_once
from .support import ROOT, Supervisor

WORKERS = [{"queues": ["*"], "threads": 3, "polling_interval": 0.05, "idle_polling_ceiling": 0.5}]
# Run by `manage.py shell` through PgBouncer: enqueue, admin pages (a page
# that fails raises), then every command (one that fails raises).
THROUGH_PGBOUNCER = """
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from testproject import tasks
for n in range(5):
    tasks.record.enqueue(f"job-{n}")
client = Client()
client.force_login(User.objects.create_superuser("admin", "admin@example.com", "pw"))
for page in ("overview", "job_changelist", "process_changelist", "recurringtask_changelist"):
    response = client.get(reverse(f"admin:robust_queue_{page}"))
    assert response.status_code == 200, (page, response.status_code)
for command in (
    ("check",),
    ("robust_queue_status",),
    ("robust_queue_pause", "default"),
    ("robust_queue_resume", "default"),
    ("robust_queue_retry_failed",),
    ("robust_queue_prune",),
    ("robust_queue_clear", "--older-than", "3600"),
    ("robust_queue_metrics",),
):
    call_command(*command)
"""
POLLS = "polls for ready jobs, without LISTEN"
LISTENS = "listens for ready jobs on a direct connection"


@skipIf(connection.vendor != "postgresql", "PgBouncer pools PostgreSQL connections")
class BehindPgBouncerTests(TransactionTestCase):
    bouncer: PgBouncer

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.bouncer = PgBouncer(connection.settings_dict)

    @classmethod
    def tearDownClass(cls) -> None:
        # Its server sessions would keep the test database from being dropped.
        cls.bouncer.destroy()
        super().tearDownClass()

    def supervisor(self, **config: object) -> Supervisor:
        config = {"pooled_databases": ["default"], "workers": WORKERS, **config}
        return Supervisor(self, env=self.bouncer.env(), **config)

    def enqueue(self, first: int, count: int) -> None:
        for n in range(first, first + count):
            tasks.record.enqueue(f"job-{n}")

    def assert_ran_once(self, count: int) -> None:
        """Jobs job-0 .. job-<count - 1> all finished, each run once."""
        wait_until(lambda: Job.objects.filter(finished_at__isnull=False).count() == count, 30)
        runs = LedgerEntry.objects.values("key").annotate(n=Count("id"))
        expected = sorted(f"job-{n}" for n in range(count))
        self.assertEqual(sorted(row["key"] for row in runs), expected)
        self.assertEqual({row["n"] for row in runs}, {1})

    def test_a_whole_drain_runs_every_job_once_and_the_workers_poll(self) -> None:
        """Jobs enqueued before and while the workers run are each run
        once; the worker says at start that it polls, without LISTEN."""
        self.enqueue(0, 60)
        supervisor = self.supervisor(workers=[*WORKERS, *WORKERS])
        wait_until(lambda: supervisor.output().count(POLLS) == 2, timeout=20)
        self.enqueue(60, 60)
        self.assert_ran_once(120)
        # Each claimed once: no claim's answer was lost on the way.
        self.assertEqual({len(job.worker_ids) for job in Job.objects.all()}, {1})
        self.assertNotIn("Traceback", supervisor.output())
        self.assertIn("pool_mode = transaction", (self.bouncer.dir / "pgbouncer.ini").read_text())

    def test_a_direct_connection_for_listen_wakes_the_worker(self) -> None:
        """With listen_database set, LISTEN goes to the server directly: an
        idle worker (polling only every 30 s) starts a new job at once."""
        settings = connection.settings_dict
        direct = (
            f"host={settings['HOST']} port={settings['PORT']} "
            f"dbname={settings['NAME']} user={settings['USER']}"
        )
        slow = [{**WORKERS[0], "polling_interval": 30, "idle_polling_ceiling": 30}]
        supervisor = self.supervisor(workers=slow, listen_database=direct)
        wait_until(lambda: LISTENS in supervisor.output(), timeout=20)
        self.assertNotIn(POLLS, supervisor.output())
        # The first poll has passed: only a notification starts the job now.
        wait_until(self._listening, timeout=20)
        tasks.record.enqueue("job-0")
        self.assert_ran_once(1)
        job = Job.objects.get()
        self.assertLess((job.started_at - job.enqueued_at).total_seconds(), 5)

    def test_pgbouncer_restarted_mid_drain_loses_no_job_and_runs_none_twice(self) -> None:
        """Killed and started again while jobs run: the sessions behind it
        end, the processes reconnect, and every job runs exactly once (a
        claim whose answer was lost is given back, a finish whose answer
        was lost is found recorded)."""
        self.enqueue(0, 150)
        supervisor = self.supervisor()
        wait_until(lambda: Job.objects.filter(finished_at__isnull=False).count() >= 20, 30)
        self.bouncer.restart()
        self.enqueue(150, 50)
        assert_each_ran_at_most_once(self, "default", 200)
        self.assertIsNone(supervisor.popen.poll())

    def test_enqueue_the_admin_and_every_command_work_through_it(self) -> None:
        """Each in a process of its own whose default database is the
        PgBouncer: enqueue (and a failure to retry), admin pages, and the
        commands; then a supervisor runs what they left."""
        self.manage("shell", "-c", THROUGH_PGBOUNCER)
        self.manage("robust_queue", "--check")
        supervisor = self.supervisor()
        self.assert_ran_once(5)
        self.assertNotIn("Traceback", supervisor.output())

    def manage(self, *args: str) -> None:
        environment = {
            **os.environ,
            "ROBUST_QUEUE_DB_NAME": connection.settings_dict["NAME"],
            "ROBUST_QUEUE_CONFIG_JSON": json.dumps({"pooled_databases": ["default"]}),
            **self.bouncer.env(),
        }
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=environment,
            capture_output=True,
            text=True,
            timeout=60,
        )
        output = done.stdout + done.stderr
        self.assertNotIn("Traceback", output, args)
        self.assertEqual(done.returncode, 0, f"{args}: {output}")

    def _listening(self) -> bool:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND query LIKE 'LISTEN %%'"
            )
            return bool(cursor.fetchone()[0])
