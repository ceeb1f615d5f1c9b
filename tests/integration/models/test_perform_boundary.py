"""Whatever a job row holds, performing it records an outcome: a claimed job
is never left claimed by a worker that lives (hand-edited rows on the real
database)."""

from __future__ import annotations

from typing import Any
from unittest import mock

from django.test import TestCase

from robust_queue.compat import TaskResultStatus
from robust_queue.models import ClaimedExecution, Job, JobState
from robust_queue.running.performing import perform
from testproject import finalize_tasks
from testproject.models import LedgerEntry
from tests.helpers import claim

# Exists: record_when_allowed returns as soon as it has recorded its run.
GO = __file__


def claimed_with(**row: Any) -> tuple[ClaimedExecution, str]:
    """A claimed job whose row is then edited by hand (``row``)."""
    result = finalize_tasks.record_when_allowed.enqueue("ran", GO)
    [claimed] = claim()
    Job.objects.filter(pk=claimed.job_id).update(**row)
    return ClaimedExecution.objects.select_related("job").get(pk=claimed.pk), result.id


class PerformBoundaryTests(TestCase):
    def perform(self, claimed: ClaimedExecution) -> list[str]:
        calls: list[str] = []
        finalized = perform(
            claimed,
            on_outcome=lambda: calls.append("outcome"),
            on_recorded=lambda: calls.append("recorded"),
        )
        self.assertIs(finalized, True)
        return calls

    def test_a_row_that_cannot_be_read_back_fails_before_the_body(self) -> None:
        """A row whose running result cannot be built (every column the
        code knows of is read leniently today, so the failure is injected
        where a future column could raise): the job fails with
        DeserializationError instead of raising out of perform() and
        staying claimed; the body never runs."""
        claimed, result_id = claimed_with()
        unreadable = mock.patch(
            "robust_queue.running.performing.build_result",
            side_effect=TypeError("unreadable column"),
        )
        with unreadable:
            self.assertEqual(self.perform(claimed), ["outcome", "recorded"])
        job = Job.objects.with_executions().get(result_id=result_id)
        self.assertEqual(job.state, JobState.FAILED)
        [error] = job.errors
        self.assertEqual(
            error["exception_class_path"], "robust_queue.exceptions.DeserializationError"
        )
        self.assertIn(f"Job {result_id}'s stored row cannot be read back", error["traceback"])
        self.assertFalse(LedgerEntry.objects.exists())

    def test_hand_edited_error_records_neither_stop_the_job_nor_its_result(self) -> None:
        """An ``errors`` column holding things that are not error records:
        the body runs and its outcome is written; the result shows them."""
        claimed, result_id = claimed_with(errors=[1, "two", {"traceback": "three"}])
        self.assertEqual(self.perform(claimed), ["outcome", "recorded"])
        self.assertEqual(LedgerEntry.objects.filter(key="ran").count(), 1)
        result = finalize_tasks.record_when_allowed.get_result(result_id)
        self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(
            [(e.exception_class_path, e.traceback) for e in result.errors],
            [("", "(not an error record) 1"), ("", "(not an error record) 'two'"), ("", "three")],
        )

    def test_an_errors_column_that_is_not_a_list_still_reads(self) -> None:
        claimed, result_id = claimed_with(errors={"not": "a list"})
        self.perform(claimed)
        result = finalize_tasks.record_when_allowed.get_result(result_id)
        self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual([e.traceback for e in result.errors], ["(not a list) {'not': 'a list'}"])
