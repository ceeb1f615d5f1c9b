"""A cancel request that arrives after a transition last looked for one,
just before it takes the claim: a transition that would put the job back
to run (a retry, a release, a snooze) fails it as cancelled instead, so
the request is never lost with the claim (``take_claim_to_run_again``)."""

from __future__ import annotations

from datetime import timedelta

from django.test import TestCase

from robust_queue.exceptions import JobCancelledError
from robust_queue.models import (
    ClaimedExecution,
    Job,
    JobState,
    ReadyExecution,
    ScheduledExecution,
)
from robust_queue.models.error_record import error_record
from robust_queue.running.snoozing import snooze_claim
from testproject import tasks
from tests.helpers import cancel_requested_before_the_take, claim

CANCELLED = f"{JobCancelledError.__module__}.{JobCancelledError.__qualname__}"


class CancelAtTheFenceTests(TestCase):
    def setUp(self) -> None:
        self.result = tasks.add.enqueue(1, 2)
        (self.claimed,) = claim(1)

    def assert_failed_as_cancelled(self, fired: list[str]) -> None:
        self.assertEqual(len(fired), 1, "the request went in before the claim's DELETE")
        job = Job.objects.with_executions().get(result_id=self.result.id)
        self.assertEqual(job.state, JobState.FAILED)
        self.assertEqual(job.errors[-1]["exception_class_path"], CANCELLED)
        self.assertFalse(ClaimedExecution.objects.exists())
        self.assertFalse(ReadyExecution.objects.exists())
        self.assertFalse(ScheduledExecution.objects.exists())

    def test_a_failure_that_would_retry_is_failed_as_cancelled(self) -> None:
        with cancel_requested_before_the_take(self.claimed) as fired:
            done = self.claimed.fail(error_record(ValueError("boom")), timedelta(seconds=30))
        self.assertTrue(done)
        self.assert_failed_as_cancelled(fired)

    def test_a_release_is_failed_as_cancelled(self) -> None:
        with cancel_requested_before_the_take(self.claimed) as fired:
            self.assertTrue(self.claimed.release())
        self.assert_failed_as_cancelled(fired)

    def test_a_snooze_is_failed_as_cancelled(self) -> None:
        with cancel_requested_before_the_take(self.claimed) as fired:
            self.assertTrue(snooze_claim(self.claimed, timedelta(minutes=5)))
        self.assert_failed_as_cancelled(fired)

    def test_a_final_failure_keeps_its_own_error(self) -> None:
        """No retry: the job ends FAILED either way, with the error it had."""
        with cancel_requested_before_the_take(self.claimed) as fired:
            self.assertTrue(self.claimed.fail(error_record(ValueError("boom"))))
        self.assertEqual(len(fired), 1)
        job = Job.objects.get(result_id=self.result.id)
        self.assertEqual(job.errors[-1]["exception_class_path"], "builtins.ValueError")

    def test_without_a_request_a_release_puts_the_job_back(self) -> None:
        self.assertTrue(self.claimed.release())
        self.assertEqual(ReadyExecution.objects.get().job.result_id, self.result.id)

    def test_a_claim_already_gone_is_left_to_whoever_took_it(self) -> None:
        ClaimedExecution.objects.filter(pk=self.claimed.pk).delete()
        self.assertFalse(self.claimed.release())
        self.assertFalse(self.claimed.fail(error_record(ValueError("x")), timedelta(seconds=1)))
        self.assertFalse(snooze_claim(self.claimed, timedelta(seconds=1)))
        self.assertFalse(ReadyExecution.objects.exists())
        self.assertFalse(ScheduledExecution.objects.exists())
