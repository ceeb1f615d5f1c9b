"""cancel(): waiting jobs end FAILED at once, running ones get a stored
request, finished ones and unknown ids are clear errors."""

from __future__ import annotations

from datetime import timedelta

from asgiref.sync import async_to_sync
from django.test import TestCase
from django.utils import timezone

import robust_queue
from robust_queue.compat import TaskContext, TaskResultDoesNotExist, TaskResultStatus
from robust_queue.exceptions import NotCancellableError, ProcessExitError
from robust_queue.models import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    Job,
    ReadyExecution,
    ScheduledExecution,
)
from robust_queue.operations.cancellation import CancelOutcome
from testproject import control_tasks as ct
from testproject import tasks
from tests.helpers import claim, work_off

CANCELLED = "robust_queue.exceptions.JobCancelledError"


def last_error(result_id: str) -> str:
    return str(Job.objects.get(result_id=result_id).errors[-1]["exception_class_path"])


class CancelWaitingTests(TestCase):
    def test_a_ready_job_ends_failed_and_leaves_its_queue(self) -> None:
        result = tasks.add.enqueue(1, 2)
        self.assertIs(robust_queue.cancel(result.id), CancelOutcome.CANCELLED)
        self.assertFalse(ReadyExecution.objects.exists())
        fetched = tasks.add.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.FAILED)
        self.assertEqual(fetched.errors[0].exception_class_path, CANCELLED)
        self.assertEqual(work_off(), 0)

    def test_a_scheduled_job_is_cancelled(self) -> None:
        later = timezone.now() + timedelta(hours=1)
        result = tasks.add.using(run_after=later).enqueue(1, 2)
        job = Job.objects.get(result_id=result.id)
        self.assertIs(job.cancel(), CancelOutcome.CANCELLED)
        self.assertFalse(ScheduledExecution.objects.exists())
        self.assertEqual(last_error(result.id), CANCELLED)

    def test_cancelling_a_ready_job_releases_its_concurrency_slot(self) -> None:
        """The slot holder is cancelled: the blocked job of its key is ready."""
        first = ct.limited.enqueue("acme", "first")
        second = ct.limited.enqueue("acme", "second")
        third = ct.limited.enqueue("acme", "third")
        self.assertEqual(BlockedExecution.objects.get().job.result_id, third.id)
        robust_queue.cancel(first.id)
        self.assertFalse(BlockedExecution.objects.exists())
        ready = set(ReadyExecution.objects.values_list("job__result_id", flat=True))
        self.assertEqual(ready, {second.id, third.id})

    def test_a_blocked_job_is_cancelled_without_touching_the_slots(self) -> None:
        ct.limited.enqueue("acme", "first")
        ct.limited.enqueue("acme", "second")
        blocked = ct.limited.enqueue("acme", "third")
        robust_queue.cancel(blocked.id)
        self.assertFalse(BlockedExecution.objects.exists())
        self.assertEqual(ReadyExecution.objects.count(), 2)
        self.assertEqual(last_error(blocked.id), CANCELLED)

    def test_acancel_is_the_async_twin(self) -> None:
        result = tasks.add.enqueue(1, 2)
        outcome = async_to_sync(robust_queue.acancel)(result.id)
        self.assertIs(outcome, CancelOutcome.CANCELLED)
        self.assertEqual(last_error(result.id), CANCELLED)


class CancelErrorsTests(TestCase):
    def test_a_finished_job_cannot_be_cancelled(self) -> None:
        result = tasks.add.enqueue(1, 2)
        work_off()
        with self.assertRaisesMessage(NotCancellableError, "has already finished"):
            robust_queue.cancel(result.id)

    def test_a_failed_job_cannot_be_cancelled(self) -> None:
        result = tasks.fail.enqueue()
        work_off()
        with self.assertRaisesMessage(NotCancellableError, "has already failed"):
            robust_queue.cancel(result.id)

    def test_a_cancelled_job_cannot_be_cancelled_again(self) -> None:
        result = tasks.add.enqueue(1, 2)
        robust_queue.cancel(result.id)
        with self.assertRaisesMessage(NotCancellableError, "has already failed"):
            robust_queue.cancel(result.id)
        self.assertEqual(len(Job.objects.get().errors), 1)

    def test_an_unknown_id_is_a_clear_error(self) -> None:
        for bad in ("no-such-id", "", "x" * 65, None, 42):
            with self.subTest(bad=bad):
                with self.assertRaisesMessage(TaskResultDoesNotExist, "No job has the result id"):
                    robust_queue.cancel(bad)  # type: ignore[arg-type]


class CancelRunningTests(TestCase):
    def test_a_running_job_gets_a_stored_request(self) -> None:
        result = tasks.add.enqueue(1, 2)
        (claimed,) = claim()
        self.assertIs(robust_queue.cancel(result.id), CancelOutcome.REQUESTED)
        claimed.refresh_from_db()
        self.assertIsNotNone(claimed.cancel_requested_at)
        # Asking again is still a request, not an error.
        self.assertIs(robust_queue.cancel(result.id), CancelOutcome.REQUESTED)

    def test_the_request_survives_the_worker_dying(self) -> None:
        """Its worker crashed: the job ends cancelled, not retried, though
        its task has a retry policy."""
        result = tasks.spin_limited_retried.enqueue("cancel-crash")
        claim()
        robust_queue.cancel(result.id)
        ClaimedExecution.objects.all().fail_all_with(ProcessExitError, "worker died")
        self.assertEqual(last_error(result.id), CANCELLED)
        self.assertTrue(FailedExecution.objects.filter(job__result_id=result.id).exists())
        self.assertFalse(ReadyExecution.objects.exists())
        self.assertFalse(ScheduledExecution.objects.exists())

    def test_a_job_given_back_at_shutdown_ends_cancelled_instead(self) -> None:
        result = tasks.add.enqueue(1, 2)
        (claimed,) = claim()
        robust_queue.cancel(result.id)
        self.assertIs(claimed.release(), True)
        self.assertFalse(ReadyExecution.objects.exists())
        self.assertEqual(last_error(result.id), CANCELLED)

    def test_the_body_that_ends_after_a_request_ends_cancelled(self) -> None:
        """Without a watchdog (perform() alone) the request is still read
        from the database by cancel_requested()."""
        result = tasks.with_context.enqueue("x")
        claim()
        robust_queue.cancel(result.id)
        fetched = tasks.with_context.get_result(result.id)
        self.assertIs(robust_queue.cancel_requested(TaskContext(task_result=fetched)), True)

    def test_cancel_requested_is_false_without_a_request(self) -> None:
        result = tasks.with_context.enqueue("x")
        claim()
        fetched = tasks.with_context.get_result(result.id)
        self.assertIs(robust_queue.cancel_requested(TaskContext(task_result=fetched)), False)


class StopSignalTests(TestCase):
    def test_cancelling_a_waiting_job_sends_job_cancelled_once(self) -> None:
        from robust_queue import signals
        from tests.integration.operations.test_signals import received

        result = tasks.add.enqueue(1, 2)
        with received(signals.job_cancelled) as cancelled:
            robust_queue.cancel(result.id)
            with self.assertRaises(NotCancellableError):
                robust_queue.cancel(result.id)
        self.assertEqual([c["job"].result_id for c in cancelled], [result.id])
        self.assertIs(cancelled[0]["sender"], Job)
        self.assertEqual(cancelled[0]["error"]["exception_class_path"], CANCELLED)

    def test_a_running_job_sends_job_cancelled_when_its_attempt_is_recorded(self) -> None:
        from robust_queue import signals
        from tests.integration.operations.test_signals import received

        result = tasks.add.enqueue(1, 2)
        (claimed,) = claim()
        with received(signals.job_cancelled) as cancelled:
            robust_queue.cancel(result.id)
            self.assertEqual(cancelled, [])  # only asked so far
            ClaimedExecution.objects.all().fail_all_with(ProcessExitError, "died")
        self.assertEqual([c["job"].result_id for c in cancelled], [result.id])

    def test_a_timeout_sends_job_timed_out(self) -> None:
        from robust_queue import signals
        from robust_queue.exceptions import TaskTimeoutError
        from robust_queue.models.error_record import error_record
        from tests.integration.operations.test_signals import received

        result = tasks.add.enqueue(1, 2)
        (claimed,) = claim()
        with (
            received(signals.job_timed_out) as timed_out,
            received(signals.job_cancelled) as cancelled,
        ):
            claimed.fail(error_record(TaskTimeoutError("late")))
        self.assertEqual([c["job"].result_id for c in timed_out], [result.id])
        self.assertEqual(cancelled, [])
