"""Resumable steps with a real supervisor: a job stopped by TERM past the
shutdown timeout in its second step resumes there with its cursor, its
first step not run again and the stop not counted as a failure; a job
whose third step raises is retried from its third step."""

from __future__ import annotations

import signal
import tempfile
from pathlib import Path

from django.test import TransactionTestCase

from robust_queue.models import FailedExecution, Job
from testproject import step_tasks
from testproject.models import LedgerEntry
from tests.helpers import wait_until
from tests.processes.support import Supervisor

CONFIG = {
    "workers": [{"queues": ["*"], "threads": 1, "polling_interval": 0.05}],
    "task_modules": ["testproject.step_tasks"],
}


def ledger(tag: str) -> list[tuple[str, int]]:
    rows = LedgerEntry.objects.filter(key__startswith=f"{tag}:").order_by("pk")
    return [(key.split(":", 1)[1], attempt) for key, attempt in rows.values_list("key", "attempt")]


def finished(result_id: str) -> bool:
    return Job.objects.filter(result_id=result_id, finished_at__isnull=False).exists()


class ResumeTests(TransactionTestCase):
    def test_a_job_stopped_in_its_second_step_resumes_there_with_its_cursor(self) -> None:
        # Never created: on its first attempt the job holds at item 3.
        hold = str(Path(tempfile.mkdtemp()) / "never")
        result = step_tasks.three_steps.enqueue("s", 6, hold=hold)
        first = Supervisor(self, shutdown_timeout=1, **CONFIG)
        wait_until(lambda: ("item-2", 1) in ledger("s"), timeout=60)
        first.send(signal.SIGTERM)
        self.assertEqual(first.wait(timeout=30), 0)

        job = Job.objects.with_executions().get(result_id=result.id)
        self.assertEqual(job.state, "ready")
        self.assertEqual(job.errors, [])
        # Checkpoint 3 waited for its window (2 s): written at the stop.
        self.assertEqual(job.steps, {"done": ["download"], "step": "process", "cursor": 3})

        Supervisor(self, **CONFIG)
        wait_until(lambda: finished(result.id), timeout=60)
        job.refresh_from_db()
        self.assertEqual(job.errors, [])
        self.assertFalse(FailedExecution.objects.exists())
        self.assertEqual(job.return_value, [None, 6, "finished", ["download", "process", "finish"]])
        self.assertEqual(
            ledger("s"),
            [("download", 1), ("process-from-0", 1), ("item-0", 1), ("item-1", 1), ("item-2", 1)]
            + [("process-from-3", 2), ("item-3", 2), ("item-4", 2), ("item-5", 2), ("finish", 2)],
        )

    def test_a_job_whose_third_step_raises_is_retried_from_its_third_step(self) -> None:
        result = step_tasks.three_steps_retried.enqueue("k", 2)
        Supervisor(self, **CONFIG)
        wait_until(lambda: finished(result.id), timeout=60)
        job = Job.objects.get(result_id=result.id)
        self.assertEqual(len(job.errors), 1)
        self.assertIn("step 3 failed on purpose", job.errors[0]["traceback"])
        self.assertEqual(
            ledger("k"),
            [("download", 1), ("process-from-0", 1), ("item-0", 1), ("item-1", 1)]
            + [("finish", 1), ("finish", 2)],
        )
