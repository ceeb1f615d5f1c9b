"""Automatic retries on the same job row, for task errors and crashes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from unittest import mock, skipIf

from django.db import connection
from django.test import TestCase
from django.utils import timezone

from robust_queue.compat import TaskResultStatus, task_finished
from robust_queue.exceptions import ProcessExitError, ProcessPrunedError
from robust_queue.models import (
    ClaimedExecution,
    FailedExecution,
    Job,
    ReadyExecution,
    ScheduledExecution,
)
from robust_queue.models.clock import database_now
from robust_queue.running.performing import perform
from testproject import control_tasks as ct
from testproject import tasks
from testproject.models import LedgerEntry
from tests.helpers import claim, work_off


def run_each_once(worker_id: str) -> int:
    claimed = claim(worker_id=worker_id)
    for row in claimed:
        perform(row)
    return len(claimed)


class RetryTests(TestCase):
    def test_backoff_reaches_success_on_attempt_three(self) -> None:
        result = ct.flaky.enqueue("flaky")
        for worker in ("w1", "w2", "w3"):
            self.assertEqual(run_each_once(worker), 1)
        fetched = ct.flaky.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(fetched.return_value, 3)
        self.assertEqual(fetched.worker_ids, ["w1", "w2", "w3"])
        self.assertEqual(fetched.attempts, 3)
        self.assertEqual(len(fetched.errors), 2)
        self.assertEqual({e.exception_class_path for e in fetched.errors}, {"builtins.ValueError"})
        self.assertIn("attempt 2 fails", fetched.errors[1].traceback)
        self.assertEqual(Job.objects.count(), 1)
        self.assertEqual(
            list(LedgerEntry.objects.order_by("attempt").values_list("attempt", flat=True)),
            [1, 2, 3],
        )

    def test_every_attempt_sends_task_finished_a_retried_one_as_failed(self) -> None:
        """task_finished reports each attempt as it ended: FAILED for one the
        policy will retry, while the stored result is READY again."""
        statuses: list[tuple[TaskResultStatus, int]] = []

        def receive(sender: type, task_result: object, **kwargs: object) -> None:
            statuses.append((task_result.status, len(task_result.errors)))  # type: ignore[attr-defined]

        task_finished.connect(receive, weak=False)
        self.addCleanup(task_finished.disconnect, receive)
        result = ct.flaky.enqueue("signals")
        run_each_once("w1")
        self.assertEqual(statuses, [(TaskResultStatus.FAILED, 1)])
        self.assertEqual(ct.flaky.get_result(result.id).status, TaskResultStatus.READY)
        run_each_once("w2")
        run_each_once("w3")
        self.assertEqual(
            statuses,
            [
                (TaskResultStatus.FAILED, 1),
                (TaskResultStatus.FAILED, 2),
                (TaskResultStatus.SUCCESSFUL, 2),
            ],
        )

    def test_the_last_allowed_failure_is_a_failed_execution(self) -> None:
        result = ct.flaky.enqueue("never", succeed_on=99)
        work_off()
        fetched = ct.flaky.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.FAILED)
        self.assertEqual((fetched.attempts, len(fetched.errors)), (3, 3))
        self.assertEqual(FailedExecution.objects.get().job.result_id, result.id)

    def test_a_retry_waits_for_its_backoff(self) -> None:
        result = ct.picky.enqueue("value")
        before = timezone.now()
        work_off()
        scheduled = ScheduledExecution.objects.get()
        self.assertEqual(scheduled.job.result_id, result.id)
        self.assertGreater(scheduled.scheduled_at, before + timedelta(seconds=20))
        self.assertEqual(ct.picky.get_result(result.id).status, TaskResultStatus.READY)

    def test_discard_on_errors_are_never_retried(self) -> None:
        result = ct.picky.enqueue("key")
        work_off()
        fetched = ct.picky.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.FAILED)
        self.assertEqual(fetched.errors[0].exception_class_path, "builtins.KeyError")

    def test_tasks_without_a_policy_fail_at_once(self) -> None:
        result = tasks.fail.enqueue()
        work_off()
        self.assertEqual(tasks.fail.get_result(result.id).status, TaskResultStatus.FAILED)


class CrashRetryTests(TestCase):
    def test_a_crashed_attempt_is_retried_by_policy(self) -> None:
        result = ct.crashes_once.enqueue("crash")
        claim(worker_id="dead")
        ClaimedExecution.objects.all().fail_all_with(ProcessExitError, "pid 7 was killed")
        self.assertEqual(ReadyExecution.objects.get().job.result_id, result.id)
        run_each_once("alive")
        fetched = ct.crashes_once.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(fetched.worker_ids, ["dead", "alive"])
        self.assertEqual(
            fetched.errors[0].exception_class_path, "robust_queue.exceptions.ProcessExitError"
        )

    def test_crashes_use_up_attempts_too(self) -> None:
        result = ct.crashes_once.enqueue("crash")
        for error in (ProcessExitError, ProcessPrunedError):
            claim()
            ClaimedExecution.objects.all().fail_all_with(error, "gone")
        fetched = ct.crashes_once.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.FAILED)
        self.assertEqual(len(fetched.errors), 2)

    def test_crashes_of_tasks_without_a_policy_are_final(self) -> None:
        result = tasks.add.enqueue(1, 2)
        claim()
        ClaimedExecution.objects.all().fail_all_with(ProcessExitError, "gone")
        self.assertEqual(tasks.add.get_result(result.id).status, TaskResultStatus.FAILED)


@skipIf(connection.vendor == "sqlite", "SQLite's clock is this process's own")
class RetryClockTests(TestCase):
    """A retry is due ``delay`` after the database's clock, whatever the
    worker host's clock says (tests/processes/test_clock_skew.py runs the
    same with a real skewed process)."""

    SKEW = timedelta(minutes=10)

    def test_a_task_error_is_retried_by_the_database_clock(self) -> None:
        for skew in (self.SKEW, -self.SKEW):
            with self.subTest(skew=skew):
                result = ct.picky.enqueue("value")
                with self._host_clock_off_by(skew):
                    work_off()
                self._assert_due_in(result.id, timedelta(seconds=20), timedelta(seconds=40))
                Job.objects.all().delete()

    def test_a_crash_is_retried_by_the_database_clock(self) -> None:
        result = ct.picky.enqueue("value")
        claim()
        with self._host_clock_off_by(self.SKEW):
            ClaimedExecution.objects.all().fail_all_with(ProcessExitError, "gone")
        self._assert_due_in(result.id, timedelta(seconds=20), timedelta(seconds=40))

    def _host_clock_off_by(self, skew: timedelta) -> Any:
        real = timezone.now
        return mock.patch("django.utils.timezone.now", lambda: real() + skew)

    def _assert_due_in(self, result_id: str, low: timedelta, high: timedelta) -> None:
        now = database_now("default")
        scheduled = ScheduledExecution.objects.get(job__result_id=result_id)
        self.assertEqual(scheduled.job.run_after, scheduled.scheduled_at)
        self.assertGreater(scheduled.scheduled_at, now + low)
        self.assertLess(scheduled.scheduled_at, now + high)
