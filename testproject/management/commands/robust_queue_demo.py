"""Enqueue example tasks, run the real supervisor until they finish, print."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand
from django.utils import timezone

import robust_queue
from testproject import tasks

ROOT = Path(__file__).resolve().parents[3]


class Command(BaseCommand):
    help = "Run the Robust Queue demo."

    def handle(self, *args: Any, **options: Any) -> None:
        soon = timezone.now() + timedelta(seconds=2)
        results = robust_queue.enqueue_all(
            [(tasks.add, (i, i), {}) for i in range(5)]
            + [(tasks.report, (3,), {}), (tasks.async_add, (20, 22), {})]
            + [(tasks.with_context, ("hello",), {}), (tasks.fail, ("on purpose",), {})]
            + [(tasks.add.using(run_after=soon), (100, 1), {})]
        )
        self.stdout.write(f"Enqueued {len(results)} tasks; starting the supervisor...")
        supervisor = subprocess.Popen([sys.executable, "manage.py", "robust_queue"], cwd=ROOT)
        try:
            self._wait(results)
        finally:
            supervisor.send_signal(signal.SIGTERM)
            supervisor.wait(timeout=30)
        for result in results:
            result.refresh()
            outcome = (
                repr(result.return_value)
                if result.status == "SUCCESSFUL"
                else result.errors[-1].exception_class_path if result.errors else "-"
            )
            self.stdout.write(
                f"{result.task.name:14} {str(result.status):11} attempts={result.attempts} {outcome}"
            )

    def _wait(self, results: list[Any], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for result in results:
                result.refresh()
            if all(result.is_finished for result in results):
                return
            time.sleep(0.2)
        self.stderr.write("Timed out waiting for the demo tasks.")
