"""The demo (`make demo`, `manage.py robust_queue_demo`) still works: run as
scripts/demo.sh runs it, against a SQLite database of its own."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

from django.test import SimpleTestCase

from testproject.management.commands.robust_queue_demo import LABEL
from tests.processes.support import ROOT

RESULT_LINE = re.compile(
    r"^(\w+) +(SUCCESSFUL|FAILED|READY|RUNNING) +attempts=(\d+) (.*)$", re.MULTILINE
)


class DemoTests(SimpleTestCase):
    def run_manage(self, data_dir: str, *args: str) -> subprocess.CompletedProcess[str]:
        # scripts/demo.sh's environment; nothing of the test run's database.
        env = {k: v for k, v in os.environ.items() if not k.startswith("ROBUST_QUEUE_")}
        env.update(
            ROBUST_QUEUE_TEST_DB="sqlite",
            ROBUST_QUEUE_DB_SUFFIX="_demo",
            ROBUST_QUEUE_DEBUG="0",
            ROBUST_QUEUE_DATA_DIR=data_dir,
        )
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def test_the_demo_runs_its_tasks_and_only_the_failing_one_fails(self) -> None:
        with tempfile.TemporaryDirectory() as data_dir:
            migrated = self.run_manage(data_dir, "migrate", "-v0")
            self.assertEqual(migrated.returncode, 0, migrated.stderr)
            demo = self.run_manage(data_dir, "robust_queue_demo")
            self.assertTrue(os.path.exists(os.path.join(data_dir, "robust_queue_demo.sqlite3")))
        self.assertEqual(demo.returncode, 0, demo.stdout + demo.stderr)
        self.assertIn("Enqueued 10 tasks; starting the supervisor...", demo.stdout)
        self.assertIn(LABEL.strip(), demo.stdout)
        results = RESULT_LINE.findall(demo.stdout)
        self.assertEqual(len(results), 10, demo.stdout)
        failed = [r for r in results if r[1] != "SUCCESSFUL"]
        self.assertEqual(
            failed, [("fail", "FAILED", "1", "builtins.ValueError (expected: it fails on purpose)")]
        )
        outcomes = [(name, value) for name, _, attempts, value in results if name != "fail"]
        self.assertEqual(
            outcomes,
            [("add", str(2 * i)) for i in range(5)]
            + [("report", "{'report': 3, 'rows': [0, 1, 2]}"), ("async_add", "42")]
            + [("with_context", outcomes[7][1]), ("add", "101")],
        )
        self.assertIn("'value': 'hello'", outcomes[7][1])
        # The supervisor it ran stopped gracefully.
        self.assertIn("every process stopped", demo.stderr)
