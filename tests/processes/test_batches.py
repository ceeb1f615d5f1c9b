"""Real worker and dispatcher processes run a batch's jobs and then its
callbacks, once, with the batch id."""

from __future__ import annotations

import time
from datetime import timedelta

from django.test import TransactionTestCase

import robust_queue
from robust_queue.models import Batch, Job
from testproject import tasks
from tests.processes.support import Supervisor


class BatchProcessTests(TransactionTestCase):
    def test_the_callbacks_run_once_after_every_job(self) -> None:
        with robust_queue.batch(on_failure=tasks.record, on_finish=tasks.echo) as batch:
            for n in range(6):
                tasks.record.enqueue(f"job-{n}", 0.05)
            tasks.fail.enqueue("boom")
        Supervisor(self, dispatchers=[{"batch_size": 100, "polling_interval": 0.05}])
        deadline = time.monotonic() + 60
        # One read: with two ("none unfinished", then "one exists") a
        # callback enqueued between them passed as finished.
        while not Job.objects.filter(
            task_path=tasks.echo.module_path, finished_at__isnull=False
        ).exists():
            self.assertLess(time.monotonic(), deadline, "the batch's callback never ran")
            time.sleep(0.1)
        stored = Batch.get(batch.batch_id)
        self.assertEqual((stored.total, stored.succeeded, stored.failed), (7, 6, 1))
        finish = Job.objects.get(task_path=tasks.echo.module_path)
        self.assertEqual(finish.args, [batch.batch_id])
        members = Job.objects.filter(batch_member__batch=stored).select_related("failed_execution")
        ends = [job.finished_at or job.failed_execution.created_at for job in members]
        # The start and the ends were stamped by different processes: 1 ms
        # of slack.
        self.assertGreaterEqual(finish.started_at + timedelta(milliseconds=1), max(ends))
        on_failure = [job.args for job in Job.objects.filter(task_path=tasks.record.module_path)]
        self.assertEqual(on_failure.count([batch.batch_id]), 1)
