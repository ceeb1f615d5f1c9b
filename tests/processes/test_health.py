"""`robust_queue health` and the subcommands against a live supervisor."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile

from django.conf import settings
from django.db import connection
from django.test import TransactionTestCase

from robust_queue.models import FailedExecution, Pause
from testproject import tasks
from tests.helpers import wait_until

from .support import ROOT, Supervisor


def manage(*args: str, database: str = "") -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "ROBUST_QUEUE_DEBUG": "0",
        "ROBUST_QUEUE_DB_NAME": database or settings.DATABASES["default"]["NAME"],
    }
    return subprocess.run(
        [sys.executable, "manage.py", "robust_queue", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


class HealthProcessTests(TransactionTestCase):
    def test_health_follows_a_live_supervisor(self) -> None:
        """Healthy while the supervisor runs (by its process row, and by its
        pidfile); unhealthy at once by pidfile when it is killed."""
        pidfile = os.path.join(tempfile.mkdtemp(), "rq.pid")
        supervisor = Supervisor(self, supervisor_pidfile=pidfile)
        supervisor.children("worker")
        supervisor.children("dispatcher")
        by_row = manage("health", "--json", "--require-workers", "--queue", "default")
        self.assertEqual(by_row.returncode, 0, by_row.stdout + by_row.stderr)
        report = json.loads(by_row.stdout)
        self.assertIs(report["healthy"], True)
        by_pidfile = manage("health", "--pidfile", pidfile)
        self.assertEqual(by_pidfile.returncode, 0, by_pidfile.stdout)
        self.assertIn(f"supervisor pid {supervisor.pid}", by_pidfile.stdout)
        supervisor.send(signal.SIGKILL)
        supervisor.wait(timeout=10)
        after = manage("health", "--pidfile", pidfile)
        self.assertEqual(after.returncode, 1, after.stdout)
        self.assertIn(f"(pid {supervisor.pid}) is gone", after.stdout)

    def test_a_database_without_the_queue_is_unhealthy(self) -> None:
        """A server that does not know the database fails `database`; an
        SQLite file without the tables fails `migrations`."""
        if connection.vendor == "sqlite":
            missing = os.path.join(tempfile.mkdtemp(), "empty.sqlite3")
            expected = ("migrations", "not applied: robust_queue.0001_initial")
        else:
            missing = "robust_queue_no_such_database_h4"
            expected = ("database", "is unreachable")
        result = manage("health", "--json", database=missing)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        report = json.loads(result.stdout)
        failed = [c for c in report["checks"] if not c["ok"]]
        self.assertEqual([c["name"] for c in failed], [expected[0]])
        self.assertIn(expected[1], failed[0]["detail"])

    def test_options_before_a_subcommands_name_are_passed_on(self) -> None:
        """`robust_queue -v 2 health` runs health; `--traceback` before
        `pause` reaches pause (its error comes with a traceback)."""
        result = manage("-v", "2", "health", "--skip-supervisor", "--json")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIs(json.loads(result.stdout)["healthy"], True)
        plain = manage("pause", "bad queue")
        self.assertEqual(plain.returncode, 1, plain.stderr)
        self.assertNotIn("Traceback", plain.stderr)
        traced = manage("--traceback", "pause", "bad queue")
        self.assertNotEqual(traced.returncode, 0, traced.stderr)
        self.assertIn("Traceback", traced.stderr)
        self.assertIn("'bad queue'", traced.stderr)

    def test_bad_threshold_fails_with_a_clear_message(self) -> None:
        result = manage("health", "--max-latency", "a minute")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("argument --max-latency: must be a duration", result.stderr)

    def test_an_open_transaction_trips_the_age_threshold(self) -> None:
        """A read transaction held on another connection: `health` reports
        it as the oldest (or an older one) and fails past
        --max-transaction-age (issue 25 section 7). SQLite: not applicable."""
        from tests.integration.operations.test_table_health import (
            oldest_age,
            once_aged,
            open_transaction,
        )

        if connection.vendor == "sqlite":
            result = manage("health", "--json", "--skip-supervisor", "--max-transaction-age", "1")
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            report = json.loads(result.stdout)
            [check] = [c for c in report["checks"] if c["name"] == "transactions"]
            self.assertEqual(check["detail"], "not applicable (SQLite)")
            return

        def age(result: subprocess.CompletedProcess[str]) -> float | None:
            try:
                return oldest_age(json.loads(result.stdout)["table_health"])
            except (ValueError, KeyError):
                return None  # no report: the assertions below show its output

        with open_transaction():
            result = once_aged(
                lambda: manage(
                    "health", "--json", "--skip-supervisor", "--max-transaction-age", "1"
                ),
                age,
                least=2,
            )
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        report = json.loads(result.stdout)
        [check] = [c for c in report["checks"] if c["name"] == "transactions"]
        self.assertIs(check["ok"], False, check)
        self.assertIn("more than 1s", check["detail"])
        self.assertGreaterEqual(report["table_health"]["oldest_transaction"]["age_seconds"], 2)

    def test_subcommands_run_through_robust_queue(self) -> None:
        self.assertEqual(manage("pause", "mail").stdout, "Queue 'mail' paused.\n")
        wait_until(lambda: Pause.objects.filter(queue_name="mail").exists())
        status = manage("status")
        self.assertEqual(status.returncode, 0, status.stderr)
        self.assertRegex(status.stdout, r"mail\s+0\s+0s\s+yes")
        self.assertEqual(manage("resume", "mail").stdout, "Queue 'mail' resumed.\n")
        self.assertEqual(manage("retry-failed").stdout, "Retried 0 failed job(s).\n")

    def test_cancel_runs_through_robust_queue(self) -> None:
        """Each id is reported; one unknown id makes the exit code 1."""
        waiting = tasks.add.enqueue(1, 2)
        result = manage("cancel", "--", waiting.id, "no-such-id")
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertEqual(result.stdout, f"{waiting.id}: cancelled\n")
        self.assertIn("no-such-id: error: No job has the result id", result.stderr)
        self.assertTrue(FailedExecution.objects.filter(job__result_id=waiting.id).exists())
        again = manage("cancel", "--", waiting.id)
        self.assertEqual(again.returncode, 1)
        self.assertIn("has already failed", again.stderr)
