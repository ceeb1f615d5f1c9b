"""An outcome whose answer was lost as the server committed it: the retry
finds the claim gone, and the job says the write was this worker's. The
outcome is then recorded once, signals and statistics included, instead of
being taken for someone else's (``finalizing.Step.landed``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from django.db import OperationalError, connection
from django.db.models import Sum
from django.test import TransactionTestCase, override_settings
from django.utils import timezone

from robust_queue.compat import TaskResultStatus, task_finished
from robust_queue.exceptions import ProcessPrunedError
from robust_queue.models import ClaimedExecution, Job, JobState, NextClaim, Statistic
from robust_queue.running.finalizing import Finalized, record_success
from robust_queue.running.performing import perform
from robust_queue.signals import job_retried
from testproject import control_tasks, tasks
from tests.helpers import answer_lost, claim, make_process

LOST = OperationalError("server closed the connection unexpectedly")


@contextmanager
def commit_answer_lost(step: str) -> Iterator[None]:
    """The first COMMIT after ``ClaimedExecution.<step>`` ran goes through,
    then raises once as a dropped connection would."""
    real_step = getattr(ClaimedExecution, step)
    real_commit = connection.commit
    ran: list[object] = []

    def marked(self: ClaimedExecution, *args: Any) -> Any:
        ran.append(self.pk)
        return real_step(self, *args)

    def commit() -> None:
        real_commit()
        if len(ran) == 1:
            ran.append(None)
            raise LOST

    with (
        mock.patch.object(ClaimedExecution, step, marked),
        mock.patch.object(connection, "commit", commit),
    ):
        yield


def pruned_first(claimed: ClaimedExecution, write: Callable[..., bool]) -> Callable[..., bool]:
    """``write`` whose first call fails before sending anything, while a
    supervisor prunes the claim; later calls run as they are."""
    calls: list[object] = []

    def refused(*args: Any, **kwargs: Any) -> bool:
        if not calls:
            calls.append(None)
            ClaimedExecution.objects.filter(pk=claimed.pk).fail_all_with(
                ProcessPrunedError, "pruned"
            )
            raise OperationalError("connection refused")
        return write(*args, **kwargs)

    return refused


class LostOutcomeAnswerTests(TransactionTestCase):
    def setUp(self) -> None:
        self.finished: list[Any] = []
        self.retried: list[Any] = []
        task_finished.connect(self.on_finished)
        job_retried.connect(self.on_retried)
        self.addCleanup(task_finished.disconnect, self.on_finished)
        self.addCleanup(job_retried.disconnect, self.on_retried)

    def on_finished(self, sender: object, task_result: Any, **kwargs: object) -> None:
        self.finished.append(task_result)

    def on_retried(self, sender: object, job: Job, **kwargs: object) -> None:
        self.retried.append(job.result_id)

    def counted(self, column: str) -> int:
        """This minute's count (the statistics also keep a row of totals)."""
        rows = Statistic.objects.filter(minute__gte=timezone.now() - dt.timedelta(minutes=5))
        return rows.aggregate(n=Sum(column))["n"] or 0

    def test_a_success_whose_answer_was_lost_is_recorded_once(self) -> None:
        result = tasks.add.enqueue(1, 2)
        (row,) = claim(1)
        with answer_lost("finish", once=True):
            self.assertIs(perform(row), True)
        [seen] = self.finished
        self.assertEqual((seen.status, seen.return_value), (TaskResultStatus.SUCCESSFUL, 3))
        self.assertEqual(
            Job.objects.with_executions().get(result_id=result.id).state, JobState.FINISHED
        )
        self.assertEqual(self.counted("finished"), 1)

    @override_settings(ROBUST_QUEUE={"preserve_finished_jobs": False})
    def test_a_success_not_kept_whose_answer_was_lost_is_recorded_once(self) -> None:
        tasks.add.enqueue(1, 2)
        (row,) = claim(1)
        with commit_answer_lost("_take"):
            self.assertIs(perform(row), True)
        self.assertEqual([r.status for r in self.finished], [TaskResultStatus.SUCCESSFUL])
        self.assertFalse(Job.objects.exists())
        self.assertEqual(self.counted("finished"), 1)

    def test_a_failure_whose_answer_was_lost_is_recorded_once(self) -> None:
        result = tasks.fail.enqueue("boom")
        (row,) = claim(1)
        with commit_answer_lost("_record_failure"):
            self.assertIs(perform(row), True)
        self.assertEqual([r.status for r in self.finished], [TaskResultStatus.FAILED])
        job = Job.objects.with_executions().get(result_id=result.id)
        self.assertEqual(job.state, JobState.FAILED)
        self.assertEqual(len(job.errors), 1)
        self.assertEqual(self.counted("failed"), 1)

    def test_a_retry_whose_answer_was_lost_is_recorded_once(self) -> None:
        result = control_tasks.picky.enqueue("value")
        (row,) = claim(1)
        with commit_answer_lost("_record_failure"):
            self.assertIs(perform(row), True)
        self.assertEqual(self.retried, [result.id])
        self.assertEqual(len(self.finished), 1)
        self.assertEqual(
            Job.objects.with_executions().get(result_id=result.id).state, JobState.SCHEDULED
        )
        self.assertEqual(self.counted("retried"), 1)

    def test_the_finish_of_a_finish_and_claim_whose_answer_was_lost_is_recorded(self) -> None:
        tasks.add.enqueue(1, 2)
        following = tasks.add.enqueue(2, 2)
        (row,) = claim(1)
        process = make_process()
        then = NextClaim(None, (), None, process.pk, "w")
        with answer_lost("finish_and_claim"):
            self.assertIs(record_success(row, 3, then), Finalized.RECORDED)
        self.assertEqual(then.claimed, [], "no thread holds the next job")
        # The next job is claimed in doubt: the worker's loop gives it back.
        self.assertEqual(ClaimedExecution.objects.release_in_doubt(process.pk), 1)
        self.assertEqual(
            Job.objects.with_executions().get(result_id=following.id).state, JobState.READY
        )

    def test_a_success_after_a_prune_is_still_skipped(self) -> None:
        """The error came before anything was written and the claim was
        pruned meanwhile: the job's failure is the prune's, not this."""
        result = tasks.add.enqueue(1, 2)
        (row,) = claim(1)
        row.finish = pruned_first(row, row.finish)  # type: ignore[method-assign]
        self.assertIs(perform(row), False)
        self.assertEqual(self.finished, [])
        job = Job.objects.with_executions().get(result_id=result.id)
        self.assertEqual(job.state, JobState.FAILED)
        self.assertEqual(self.counted("finished"), 0)

    def test_a_failure_after_a_prune_is_still_skipped(self) -> None:
        result = tasks.fail.enqueue("boom")
        (row,) = claim(1)
        row.fail = pruned_first(row, row.fail)  # type: ignore[method-assign]
        self.assertIs(perform(row), False)
        self.assertEqual(self.finished, [])
        [error] = Job.objects.get(result_id=result.id).errors
        self.assertIn("ProcessPrunedError", error["exception_class_path"])
