"""Enqueue example tasks, run the real supervisor until they finish, print."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

import robust_queue
from testproject import tasks

ROOT = Path(__file__).resolve().parents[3]
ON_PURPOSE = "on purpose: the demo shows a failing task"
# Whether the framework logs a traceback for it depends on the Django line
# and LOGGING (the backport's logger prints one; Django 6 with DEBUG off
# does not): the label covers both.
LABEL = (
    "One task, `fail`, raises ValueError on purpose to show a failure: it "
    "ends FAILED below, and any error or traceback logged for it is expected.\n"
)


class Command(BaseCommand):
    help = "Run the Robust Queue demo."

    def handle(self, *args: Any, **options: Any) -> None:
        soon = timezone.now() + timedelta(seconds=2)
        results = robust_queue.enqueue_all(
            [(tasks.add, (i, i), {}) for i in range(5)]
            + [(tasks.report, (3,), {}), (tasks.async_add, (20, 22), {})]
            + [(tasks.with_context, ("hello",), {}), (tasks.fail, (ON_PURPOSE,), {})]
            + [(tasks.add.using(run_after=soon), (100, 1), {})]
        )
        self.stdout.write(f"Enqueued {len(results)} tasks; starting the supervisor...")
        self.stdout.write(LABEL)
        supervisor = subprocess.Popen([sys.executable, "manage.py", "robust_queue"], cwd=ROOT)
        try:
            finished = self._wait(results)
        finally:
            supervisor.send_signal(signal.SIGTERM)
            supervisor.wait(timeout=30)
        for result in results:
            result.refresh()
            outcome = (
                repr(result.return_value)
                if result.status == "SUCCESSFUL"
                else result.errors[-1].exception_class_path
                if result.errors
                else "-"
            )
            if result.task.name == "fail":
                outcome += " (expected: it fails on purpose)"
            self.stdout.write(
                f"{result.task.name:14} {str(result.status):11} attempts={result.attempts} {outcome}"
            )
        if not finished:
            raise CommandError("Timed out waiting for the demo tasks.")

    def _wait(self, results: list[Any], timeout: float = 60) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for result in results:
                result.refresh()
            if all(result.is_finished for result in results):
                return True
            time.sleep(0.2)
        return False
