"""Progress and waiting with a real supervisor: a task's progress shows
in its row while it runs; ``wait_result`` / ``await_result`` return soon
after the job ends (PostgreSQL's NOTIFY, SQLite's data version, MariaDB's
back-off), raise ``TimeoutError`` when it does not, and leave no
connection behind."""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from django.db import connection
from django.test import TransactionTestCase

import robust_queue
from robust_queue.compat import TaskResult, TaskResultStatus
from robust_queue.models import Job
from testproject import progress_tasks, tasks
from tests.helpers import wait_until
from tests.processes.support import Supervisor

ONE_THREAD = {"workers": [{"queues": ["*"], "threads": 1, "polling_interval": 0.05}]}
TASK_MODULES = ["testproject.progress_tasks"]
# Far above any wake-up, and above a supervisor's start on a loaded host.
TIMEOUT = 60.0
# What "promptly" means here: PostgreSQL and SQLite are woken within
# milliseconds, MariaDB within its longest back-off (1 s); the rest is the
# worker seeing the file and finishing, on a loaded host.
PROMPT = 5.0


def running(result_id: str) -> bool:
    return Job.objects.filter(result_id=result_id, claimed_execution__isnull=False).exists()


def sessions() -> int:
    """This process's open connections to the database: its sockets to the
    server's port (/proc), or its open files of the SQLite database. The
    supervisor's sessions are not counted: they come and go with its
    threads."""
    if connection.vendor == "sqlite":
        name = os.path.realpath(connection.settings_dict["NAME"])
        return sum(1 for target in _open_files() if target in (name, f"{name}-wal"))
    port = int(connection.settings_dict["PORT"] or 0)
    inodes = set()
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    return sum(1 for target in _open_files() if target in inodes)


def _open_files() -> list[str]:
    found = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            found.append(os.readlink(fd))
        except OSError:
            continue
    return [os.path.realpath(t) if t.startswith("/") else t for t in found]


class WaitingTests(TransactionTestCase):
    def setUp(self) -> None:
        folder = tempfile.mkdtemp()
        self.gate = os.path.join(folder, "gate")
        self.addCleanup(lambda: Path(self.gate).unlink(missing_ok=True))

    def open_gate_after(self, seconds: float) -> list[float]:
        """Create the gate file ``seconds`` from now; the list gets the
        monotonic time it was created at."""
        opened: list[float] = []

        def create() -> None:
            Path(self.gate).touch()
            opened.append(time.monotonic())

        timer = threading.Timer(seconds, create)
        timer.start()
        self.addCleanup(timer.cancel)
        return opened

    def started(self, result: TaskResult[Any]) -> None:
        wait_until(lambda: running(result.id), timeout=TIMEOUT)

    def assert_prompt(self, opened: list[float], returned: float) -> None:
        self.assertEqual(len(opened), 1)
        self.assertLess(returned - opened[0], PROMPT)

    def test_wait_returns_soon_after_the_job_finishes(self) -> None:
        Supervisor(self, task_modules=TASK_MODULES)
        result = progress_tasks.until_exists.enqueue(self.gate)
        self.started(result)
        opened = self.open_gate_after(0.5)
        waited = robust_queue.wait_result(result, timeout=TIMEOUT)
        self.assert_prompt(opened, time.monotonic())
        self.assertIs(waited, result)
        self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(result.return_value, "done")

    def test_wait_returns_soon_after_the_job_fails(self) -> None:
        Supervisor(self, task_modules=TASK_MODULES)
        result = progress_tasks.until_exists.enqueue(self.gate, fail=True)
        self.started(result)
        opened = self.open_gate_after(0.5)
        robust_queue.wait_result(result, timeout=TIMEOUT)
        self.assert_prompt(opened, time.monotonic())
        self.assertEqual(result.status, TaskResultStatus.FAILED)
        self.assertIn("failed on purpose", result.errors[0].traceback)

    def test_a_job_that_does_not_finish_in_time_raises_timeout_error(self) -> None:
        Supervisor(self, task_modules=TASK_MODULES)
        result = progress_tasks.until_exists.enqueue(self.gate)
        self.started(result)
        began = time.monotonic()
        with self.assertRaisesMessage(TimeoutError, f"Job {result.id} of task"):
            robust_queue.wait_result(result, timeout=0.6)
        self.assertGreaterEqual(time.monotonic() - began, 0.6)
        self.assertLess(time.monotonic() - began, 0.6 + PROMPT)
        self.assertEqual(result.status, TaskResultStatus.READY)

    def test_await_result_in_async_code(self) -> None:
        Supervisor(self, task_modules=TASK_MODULES)
        result = progress_tasks.until_exists.enqueue(self.gate)
        self.started(result)
        opened = self.open_gate_after(0.5)

        async def main() -> TaskResult[Any]:
            return await robust_queue.await_result(result, timeout=TIMEOUT)

        waited = asyncio.run(main())
        self.assert_prompt(opened, time.monotonic())
        self.assertEqual(waited.status, TaskResultStatus.SUCCESSFUL)

        async def too_soon() -> None:
            late = await progress_tasks.until_exists.aenqueue(self.gate + "-never")
            await robust_queue.await_result(late, timeout=0.3)

        with self.assertRaises(TimeoutError):
            asyncio.run(too_soon())

    def test_a_wait_leaves_no_connection_behind(self) -> None:
        Supervisor(self, task_modules=TASK_MODULES, **ONE_THREAD)
        first = tasks.add.enqueue(1, 2)
        robust_queue.wait_result(first, timeout=TIMEOUT)
        before = sessions()
        result = progress_tasks.until_exists.enqueue(self.gate)
        self.started(result)
        self.open_gate_after(0.5)
        robust_queue.wait_result(result, timeout=TIMEOUT)
        self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(sessions(), before)

        later = tasks.add.enqueue(2, 2)

        async def main() -> None:
            await robust_queue.await_result(later, timeout=TIMEOUT)

        asyncio.run(main())
        self.assertEqual(later.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(sessions(), before)

    def test_a_finished_job_returns_at_once(self) -> None:
        Supervisor(self, task_modules=TASK_MODULES)
        result = tasks.add.enqueue(2, 3)
        wait_until(lambda: Job.objects.filter(result_id=result.id).first().finished_at, TIMEOUT)
        began = time.monotonic()
        robust_queue.wait_result(result, timeout=TIMEOUT)
        self.assertLess(time.monotonic() - began, 1)
        self.assertEqual(result.return_value, 5)


class ProgressTests(TransactionTestCase):
    def test_a_running_task_shows_its_progress_in_its_row(self) -> None:
        gate = os.path.join(tempfile.mkdtemp(), "gate")
        self.addCleanup(lambda: Path(gate).unlink(missing_ok=True))
        result = progress_tasks.report_then_wait.enqueue(420, 1000, "rows", gate)
        Supervisor(self, task_modules=TASK_MODULES)

        def shown() -> Any:
            job = Job.objects.filter(result_id=result.id).first()
            return job and job.progress and job.finished_at is None and job.progress

        stored = wait_until(shown, timeout=TIMEOUT)
        self.assertEqual(
            {key: stored[key] for key in ("done", "total", "note")},
            {"done": 420, "total": 1000, "note": "rows"},
        )
        read = robust_queue.progress_of(result)
        self.assertEqual((read.done, read.total, read.fraction), (420, 1000, 0.42))
        Path(gate).touch()
        robust_queue.wait_result(result, timeout=TIMEOUT)
        self.assertEqual(result.return_value, 420)
        self.assertEqual(robust_queue.progress_of(result).done, 420)
