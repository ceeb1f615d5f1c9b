"""A newcomer's first runs: each mistake gets a message naming the fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from django.conf import settings
from django.test import TransactionTestCase

from tests.helpers import wait_until

from .support import ROOT, Supervisor


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "ROBUST_QUEUE_DB_NAME": settings.DATABASES["default"]["NAME"], **env}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


class BeforeMigrateTests(TransactionTestCase):
    def test_running_before_migrate_says_run_migrate(self) -> None:
        """An empty database: no traceback, the fix, exit 1 (--check too)."""
        empty = Path(tempfile.mkdtemp()) / "empty.sqlite3"
        for args in (["robust_queue"], ["robust_queue", "--check"]):
            with self.subTest(args=args):
                done = manage(*args, ROBUST_QUEUE_TEST_DB="sqlite", ROBUST_QUEUE_DB_NAME=str(empty))
                self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
                self.assertIn("Run `python manage.py migrate` first.", done.stderr)
                self.assertIn("robust_queue.E022", done.stderr)
                self.assertNotIn("Traceback", done.stderr)
                self.assertNotIn("valid", done.stdout)


class CheckCommandTests(TransactionTestCase):
    def test_check_reports_a_misspelt_key(self) -> None:
        done = manage(
            "robust_queue",
            "--check",
            ROBUST_QUEUE_CONFIG_JSON=json.dumps({"worker": [{"threads": 2}]}),
        )
        self.assertEqual(done.returncode, 1, done.stdout)
        self.assertIn("unknown key 'worker'", done.stderr)
        self.assertIn("Did you mean 'workers'?", done.stderr)

    def test_check_warns_about_a_queue_no_task_uses_and_passes(self) -> None:
        done = manage("robust_queue", "--check", "--queues", "default,reprots")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("robust_queue.W020", done.stderr)
        self.assertIn("Did you mean 'reports'?", done.stderr)
        self.assertIn("configuration is valid", done.stdout)


class StartupWarningTests(TransactionTestCase):
    def test_the_supervisor_warns_at_start_and_runs(self) -> None:
        supervisor = Supervisor(self, "--queues", "reprots")
        wait_until(lambda: "started" in supervisor.output(), timeout=60)
        self.assertIn("Worker queue 'reprots' is used by no task", supervisor.output())
        self.assertIsNone(supervisor.popen.poll())
