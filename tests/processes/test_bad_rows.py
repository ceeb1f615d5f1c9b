"""The real supervisor with rows its code cannot handle: it stays up,
prunes, sweeps and replaces as usual, and logs each bad row once."""

from __future__ import annotations

import os
import signal
from datetime import timedelta

from django.test import TransactionTestCase
from django.utils import timezone

from robust_queue.models import ClaimedExecution, Job, Process, ProcessKind
from testproject import tasks
from testproject.apps import FAULT_JOBS
from tests.helpers import claim, wait_until

from .support import Supervisor


def silent_worker(name: str) -> Process:
    return Process.objects.create(
        kind=ProcessKind.WORKER,
        name=name,
        pid=999990,
        hostname="elsewhere",
        last_heartbeat_at=timezone.now() - timedelta(hours=1),
    )


def claimed_job(process: Process) -> tuple[str, int]:
    """A job claimed by ``process``: its result id and claim pk."""
    result = tasks.add.enqueue(1, 1)
    [claimed] = claim(1, process=process)
    return result.id, claimed.pk


def failed_with(result_id: str) -> str | None:
    job = Job.objects.with_executions().get(result_id=result_id)
    if not hasattr(job, "failed_execution"):
        return None
    return str(job.errors[-1]["exception_class_path"])


class BadRowTests(TransactionTestCase):
    def test_a_supervisor_stays_up_past_rows_it_cannot_fail(self) -> None:
        """An orphaned claim at boot and a silent process's claim that the
        code cannot fail are logged once each; the other silent process is
        pruned, a killed worker is replaced, and new work runs."""
        gone = silent_worker("gone")
        orphan_job, orphan_claim = claimed_job(gone)
        Process.objects.filter(pk=gone.pk).delete()
        broken = silent_worker("broken")
        broken_job, broken_claim = claimed_job(broken)
        fine = silent_worker("fine")
        fine_job, _ = claimed_job(fine)

        # The supervisor's ClaimedExecution.fail raises RuntimeError for
        # these two jobs (testproject/apps.py): claims it cannot fail.
        supervisor = Supervisor(self, env={FAULT_JOBS: f"{orphan_job},{broken_job}"})
        # Pruning starts once the supervisor has been healthy for the
        # alive threshold (10 s here).
        wait_until(lambda: failed_with(fine_job), timeout=40)
        self.assertEqual(failed_with(fine_job), "robust_queue.exceptions.ProcessPrunedError")
        wait_until(lambda: not Process.objects.filter(pk=broken.pk).exists(), timeout=20)
        # Its claim, left without a row, is the orphan sweep's once settled
        # (8.5 s here); the sweep runs every heartbeat from then on.
        wait_until(lambda: f"Failing claim {broken_claim} of job" in supervisor.output(), 30)

        [worker] = supervisor.children("worker")
        os.kill(worker.pid, signal.SIGKILL)
        wait_until(
            lambda: Process.objects.filter(kind="worker").exclude(pk=worker.pk).exists(),
            timeout=30,
        )
        after = tasks.add.enqueue(2, 3)
        wait_until(lambda: Job.objects.filter(result_id=after.id, finished_at__isnull=False))

        self.assertIsNone(supervisor.popen.poll(), supervisor.output())
        remaining = set(ClaimedExecution.objects.values_list("pk", flat=True))
        self.assertEqual(remaining, {orphan_claim, broken_claim})
        output = supervisor.output()
        self.assertIn("RuntimeError: test fault", output)
        for pk in (orphan_claim, broken_claim):
            self.assertEqual(output.count(f"Failing claim {pk} of job"), 1, output)
        self.assertEqual(output.count(f"Pruning worker broken (row {broken.pk}"), 1, output)
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=15), 0)
