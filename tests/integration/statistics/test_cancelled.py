"""Cancelled jobs in the statistics: a waiting job that is cancelled counts
once in the discarded/cancelled column; a running one counts once, as the
failed attempt it ends with. So every job that ends is counted once:
finished + (failed - retried) + discarded."""

from __future__ import annotations

from datetime import timedelta

from django.test import TestCase
from django.utils import timezone

import robust_queue
from robust_queue.exceptions import NotCancellableError, ProcessExitError
from robust_queue.models import ClaimedExecution, Job, JobDependency
from testproject import control_tasks as ct
from testproject import tasks
from tests.helpers import claim, work_off
from tests.integration.statistics.test_recording import TASK_ADD, totals

NOTHING = {"finished": 0, "failed": 0, "retried": 0, "discarded": 0}


class CancelledWaitingJobTests(TestCase):
    def test_a_cancelled_ready_job_counts_as_discarded(self) -> None:
        result = tasks.add.enqueue(1, 2)
        robust_queue.cancel(result.id)
        self.assertEqual(totals(TASK_ADD), {**NOTHING, "discarded": 1})

    def test_a_cancelled_scheduled_job_counts_as_discarded(self) -> None:
        later = timezone.now() + timedelta(hours=1)
        result = tasks.add.using(run_after=later, queue_name="reports").enqueue(1, 2)
        Job.objects.get(result_id=result.id).cancel()
        self.assertEqual(totals(TASK_ADD, queue_name="reports"), {**NOTHING, "discarded": 1})

    def test_a_cancelled_blocked_job_counts_as_discarded(self) -> None:
        ct.limited.enqueue("acme", "first")
        ct.limited.enqueue("acme", "second")
        blocked = ct.limited.enqueue("acme", "third")
        robust_queue.cancel(blocked.id)
        self.assertEqual(totals("testproject.control_tasks.limited")["discarded"], 1)

    def test_a_refused_cancel_counts_nothing(self) -> None:
        result = tasks.add.enqueue(1, 2)
        work_off()
        with self.assertRaises(NotCancellableError):
            robust_queue.cancel(result.id)
        self.assertEqual(totals(TASK_ADD), {**NOTHING, "finished": 1})

    def test_each_cancelled_job_counts_once(self) -> None:
        results = [tasks.add.enqueue(i, i) for i in range(3)]
        for result in results:
            robust_queue.cancel(result.id)
        self.assertEqual(totals(TASK_ADD), {**NOTHING, "discarded": 3})


class CancelledRunningJobTests(TestCase):
    def test_a_cancelled_running_job_counts_once_as_a_failed_attempt(self) -> None:
        """The request itself counts nothing; the attempt it ends does."""
        result = tasks.add.enqueue(1, 2)
        (claimed,) = claim()
        robust_queue.cancel(result.id)
        self.assertEqual(totals(TASK_ADD), NOTHING)
        claimed.fail_cancelled()
        self.assertEqual(totals(TASK_ADD), {**NOTHING, "failed": 1})

    def test_a_cancelled_job_whose_worker_died_counts_once(self) -> None:
        result = tasks.add.enqueue(1, 2)
        claim()
        robust_queue.cancel(result.id)
        ClaimedExecution.objects.all().fail_all_with(ProcessExitError, "worker died")
        self.assertEqual(totals(TASK_ADD), {**NOTHING, "failed": 1})


class DependencyFailedTests(TestCase):
    def test_jobs_failed_by_their_parent_count_as_discarded_once(self) -> None:
        """A child and grandchild of a failed parent never run: each counts
        once with the discarded, so every job that ends is still counted."""
        parent = tasks.fail.enqueue("boom")
        child = robust_queue.enqueue_after([parent], tasks.add, (1, 1))
        robust_queue.enqueue_after([child], tasks.add, (2, 2))
        work_off()
        JobDependency.objects.release_all_in_batches()
        self.assertEqual(totals(TASK_ADD), {**NOTHING, "discarded": 2})
        # Settled jobs are not counted again by a later pass.
        JobDependency.objects.release_all_in_batches()
        self.assertEqual(totals(TASK_ADD), {**NOTHING, "discarded": 2})
