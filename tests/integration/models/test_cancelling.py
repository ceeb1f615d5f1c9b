"""The cancel transition (models/cancelling.py) at its edges: a job that is
in no state, a job that is gone, and where a cancelled job's rows go."""

from __future__ import annotations

from django.test import TestCase
from django.utils import timezone

from robust_queue.compat import TaskResultDoesNotExist
from robust_queue.exceptions import NotCancellableError
from robust_queue.models import FailedExecution, Job, JobState, ReadyExecution
from robust_queue.models.cancelling import CancelOutcome
from robust_queue.models.job_state import WAITING_STATES, execution_manager
from testproject import control_tasks as ct
from testproject import tasks
from tests.helpers import claim


class EdgeTests(TestCase):
    def test_a_job_in_no_state_is_tried_again_then_refused(self) -> None:
        """No execution row and not finished: it is between two states (or
        broken); after a few reads the caller is told to try again."""
        limbo = Job.objects.create(
            task_path="testproject.tasks.add",
            queue_name="default",
            backend_alias="default",
            enqueued_at=timezone.now(),
        )
        with self.assertRaisesMessage(
            NotCancellableError,
            f"Job {limbo.result_id} kept changing state; try cancelling it again.",
        ):
            limbo.cancel()
        self.assertEqual(Job.objects.get(pk=limbo.pk).errors, [])

    def test_a_job_that_is_gone_is_unknown(self) -> None:
        result = tasks.add.enqueue(1, 2)
        job = Job.objects.get(result_id=result.id)
        Job.objects.filter(pk=job.pk).delete()
        with self.assertRaisesMessage(TaskResultDoesNotExist, f"Job {result.id} no longer exists."):
            job.cancel()

    def test_a_cancelled_job_keeps_its_row_with_one_failed_execution(self) -> None:
        result = tasks.add.enqueue(1, 2)
        job = Job.objects.get(result_id=result.id)
        self.assertIs(job.cancel(), CancelOutcome.CANCELLED)
        job.refresh_from_db()
        self.assertEqual(job.state, JobState.FAILED)
        self.assertEqual(FailedExecution.objects.get().job_id, job.pk)
        self.assertEqual(len(job.errors), 1)
        self.assertEqual(FailedExecution.objects.get().error, job.errors[0])

    def test_only_the_cancelled_job_leaves_its_queue(self) -> None:
        cancelled, kept = tasks.add.enqueue(1, 2), tasks.add.enqueue(3, 4)
        Job.objects.get(result_id=cancelled.id).cancel()
        self.assertEqual(
            list(ReadyExecution.objects.values_list("job__result_id", flat=True)), [kept.id]
        )

    def test_a_request_to_a_running_job_changes_no_state(self) -> None:
        result = ct.limited.enqueue("acme", "first")
        claim()
        job = Job.objects.get(result_id=result.id)
        self.assertIs(job.cancel(), CancelOutcome.REQUESTED)
        self.assertEqual(Job.objects.with_executions().get(pk=job.pk).state, JobState.CLAIMED)
        self.assertEqual(job.errors, [])


class JobStateTests(TestCase):
    def test_each_state_s_table_is_found_through_the_job(self) -> None:
        tables = {
            state: execution_manager(Job, state, "default").model._meta.db_table
            for state in JobState
            if state != JobState.FINISHED
        }
        self.assertEqual(
            tables,
            {
                JobState.READY: "robust_queue_ready_execution",
                JobState.SCHEDULED: "robust_queue_scheduled_execution",
                JobState.CLAIMED: "robust_queue_claimed_execution",
                JobState.BLOCKED: "robust_queue_blocked_execution",
                JobState.FAILED: "robust_queue_failed_execution",
            },
        )

    def test_the_manager_is_on_the_database_asked_for(self) -> None:
        self.assertEqual(execution_manager(Job, JobState.READY, "queue").db, "queue")

    def test_waiting_states_are_those_before_a_claim(self) -> None:
        self.assertEqual(WAITING_STATES, (JobState.READY, JobState.SCHEDULED, JobState.BLOCKED))
