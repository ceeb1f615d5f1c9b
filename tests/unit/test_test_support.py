"""The test suite's own helpers: thread deadlines, the optional browser tier."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import threading
from pathlib import Path

from django.test import SimpleTestCase

from tests.helpers import run_in_threads
from tests.processes.support import SESSION_VARIABLE, started_for

ROOT = Path(__file__).resolve().parents[2]


class RunInThreadsTests(SimpleTestCase):
    def test_a_thread_alive_at_the_deadline_fails(self) -> None:
        """A hung thread fails the test; it is never taken for a result."""
        release = threading.Event()
        self.addCleanup(release.set)
        with self.assertRaisesMessage(AssertionError, "threads [1] still running after 0.3s"):
            run_in_threads([lambda: 1, lambda: release.wait(30)], timeout=0.3)

    def test_the_deadline_is_shared_not_per_thread(self) -> None:
        """Each join may not restart the clock: the third thread misses it."""
        release = threading.Event()
        self.addCleanup(release.set)
        targets = [lambda delay=delay: release.wait(delay) for delay in (0.3, 0.6, 1.5)]
        with self.assertRaisesMessage(AssertionError, "threads [2] still running"):
            run_in_threads(targets, timeout=0.9)

    def test_results_come_back_in_order(self) -> None:
        self.assertEqual(run_in_threads([lambda: 1, lambda: 2], timeout=30), [1, 2])


class BrowserTierTests(SimpleTestCase):
    def test_without_playwright_the_browser_tier_skips_with_the_reason(self) -> None:
        """No collection error: the tier is skipped and says what to install."""
        env = dict(os.environ, ROBUST_QUEUE_TEST_DB="sqlite")
        env["ROBUST_QUEUE_DB_SUFFIX"] = env.get("ROBUST_QUEUE_DB_SUFFIX", "") + "_noplaywright"
        env.pop("ROBUST_QUEUE_REQUIRE_BROWSER", None)
        hide = (
            "import sys, pytest; sys.modules['playwright'] = None; "
            "sys.exit(pytest.main(['-q', '-rs', '-p', 'no:cacheprovider', 'tests/browser']))"
        )
        done = subprocess.run(
            [sys.executable, "-c", hide],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("skipped", done.stdout)
        self.assertIn("Playwright is not installed", done.stdout)
        self.assertNotIn("error", done.stdout.lower())


DATABASE_CASES = {
    "TestCase",
    "TransactionTestCase",
    "LiveServerTestCase",
    "StaticLiveServerTestCase",
}


class UnitTierTests(SimpleTestCase):
    def test_no_unit_test_opens_a_database(self) -> None:
        """scripts/test.sh runs tests/unit once per Python line, not once per
        database: a test class here that could open a database (Django's
        TestCase and kin) belongs in tests/integration. SimpleTestCase refuses
        queries, so the test case classes are what needs watching."""
        found = []
        for path in sorted((ROOT / "tests" / "unit").rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef):
                    bases = {getattr(base, "id", getattr(base, "attr", "")) for base in node.bases}
                    if bases & DATABASE_CASES:
                        found.append(f"{path.relative_to(ROOT)}::{node.name}")
        self.assertEqual(found, [])


class ProcessSweepTests(SimpleTestCase):
    def test_only_this_runs_processes_are_found_for_a_database(self) -> None:
        """Another run beside this one (another CI cell) may use a test
        database of the same name on another server: its processes are
        never this run's to kill (one cell's end-of-run sweep once killed
        the supervisor another cell's test was waiting on)."""
        name = "test_robust_queue_sweep_marker"

        def start(session: str) -> subprocess.Popen[bytes]:
            env = dict(os.environ, ROBUST_QUEUE_DB_NAME=name)
            env[SESSION_VARIABLE] = session
            process = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(60)"], env=env
            )
            self.addCleanup(process.wait)
            self.addCleanup(process.kill)
            return process

        ours = start(os.environ[SESSION_VARIABLE])
        start("another-run")
        self.assertEqual(started_for(name), [ours.pid])
