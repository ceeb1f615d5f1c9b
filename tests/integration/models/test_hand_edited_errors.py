"""A job whose ``errors`` column was edited by hand into something that is
not a JSON list still fails cleanly on every path that appends an error:
the stored value is kept as the first entry, the new error follows."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.test import SimpleTestCase, TestCase
from django.utils import timezone

from robust_queue.compat import TaskResultStatus
from robust_queue.models import ClaimedExecution, Job, JobState, Process, ProcessKind
from robust_queue.models.cancelling import CancelOutcome
from robust_queue.models.error_record import stored_errors
from testproject import tasks
from tests.helpers import claim, work_off

HAND_EDITED: list[Any] = [7, {"hand": "edited"}, "not a list", True]


def register(name: str) -> Process:
    return Process.objects.register(kind=ProcessKind.WORKER, name=name, pid=4321, hostname="h")


def edit_errors(result_id: str, value: Any) -> None:
    Job.objects.filter(result_id=result_id).update(errors=value)


def job_of(result_id: str) -> Job:
    return Job.objects.with_executions().get(result_id=result_id)


class StoredErrorsTests(SimpleTestCase):
    def test_a_list_is_read_as_it_is_and_anything_else_as_one_entry(self) -> None:
        """Nothing is lost: a value that is not a list becomes the only entry."""
        self.assertEqual(stored_errors([{"a": 1}, 2]), [{"a": 1}, 2])
        self.assertEqual(stored_errors(7), [7])
        self.assertEqual(stored_errors({"a": 1}), [{"a": 1}])
        self.assertEqual(stored_errors("text"), ["text"])
        self.assertEqual(stored_errors(None), [])

    def test_the_stored_list_is_not_changed_in_place(self) -> None:
        stored = [1]
        stored_errors(stored).append(2)
        self.assertEqual(stored, [1])


class HandEditedErrorsTests(TestCase):
    def assert_failed_after(self, result_id: str, bad: Any, exception_class_path: str) -> None:
        job = job_of(result_id)
        self.assertEqual(job.state, JobState.FAILED)
        self.assertEqual(len(job.errors), 2)
        self.assertEqual(job.errors[0], bad)
        self.assertEqual(job.errors[1]["exception_class_path"], exception_class_path)
        self.assertEqual(job.failed_execution.error["exception_class_path"], exception_class_path)
        self.assertFalse(ClaimedExecution.objects.filter(job_id=job.pk).exists())

    def test_a_failing_body_is_recorded_through_finalize(self) -> None:
        """The body's own error is stored, not a FinalizeError, and the
        job ends FAILED instead of staying claimed."""
        for bad in HAND_EDITED:
            with self.subTest(bad=bad):
                result = tasks.fail.enqueue("boom")
                edit_errors(result.id, bad)
                self.assertEqual(work_off(), 1)
                self.assert_failed_after(result.id, bad, "builtins.ValueError")
                fetched = tasks.fail.get_result(result.id)
                self.assertEqual(fetched.status, TaskResultStatus.FAILED)
                self.assertEqual(len(fetched.errors), 2)

    def test_pruning_fails_the_claim_through_fail_all_with(self) -> None:
        for bad in HAND_EDITED:
            with self.subTest(bad=bad):
                process = register(f"dead-{bad!r}")
                result = tasks.add.enqueue(1, 2)
                claim(1, process=process)
                edit_errors(result.id, bad)
                Process.objects.filter(pk=process.pk).update(
                    last_heartbeat_at=timezone.now() - timedelta(hours=1)
                )
                self.assertEqual(len(Process.objects.prune(60)), 1)
                self.assert_failed_after(
                    result.id, bad, "robust_queue.exceptions.ProcessPrunedError"
                )

    def test_cancelling_a_waiting_job_fails_it(self) -> None:
        for bad in HAND_EDITED:
            with self.subTest(bad=bad):
                result = tasks.add.enqueue(1, 2)
                edit_errors(result.id, bad)
                self.assertIs(job_of(result.id).cancel(), CancelOutcome.CANCELLED)
                self.assert_failed_after(
                    result.id, bad, "robust_queue.exceptions.JobCancelledError"
                )

    def test_a_cancel_request_is_honoured_when_the_process_s_claims_fail(self) -> None:
        """A running job asked to cancel fails as cancelled when its
        process dies (``fail_all_with`` -> ``fail_cancelled``)."""
        for bad in HAND_EDITED:
            with self.subTest(bad=bad):
                process = register(f"exiting-{bad!r}")
                result = tasks.add.enqueue(1, 2)
                claim(1, process=process)
                edit_errors(result.id, bad)
                self.assertIs(job_of(result.id).cancel(), CancelOutcome.REQUESTED)
                self.assertEqual(process.fail_claims("exited"), 1)
                self.assert_failed_after(
                    result.id, bad, "robust_queue.exceptions.JobCancelledError"
                )
