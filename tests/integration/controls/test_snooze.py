"""Snooze: a task raises ``robust_queue.Snooze(delay)`` to run again later
without counting a failure."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.test import TestCase, TransactionTestCase

import robust_queue
from robust_queue import signals
from robust_queue.compat import TaskResultStatus, task_finished
from robust_queue.models import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    Job,
    ReadyExecution,
    ScheduledExecution,
    Statistic,
)
from robust_queue.models.clock import database_now
from robust_queue.running.finalizing import Finalized, record_snooze
from robust_queue.running.performing import perform
from testproject import coordination_tasks as co
from testproject.models import LedgerEntry
from tests.helpers import claim


def run_once(worker_id: str = "w") -> int:
    claimed = claim(worker_id=worker_id)
    for row in claimed:
        perform(row)
    return len(claimed)


class SnoozeTests(TestCase):
    def test_a_snoozed_job_is_scheduled_later_without_an_error(self) -> None:
        result = co.snoozer.enqueue("later", delay=60)
        before = database_now("default")
        self.assertEqual(run_once("w1"), 1)
        job = Job.objects.get(result_id=result.id)
        self.assertEqual((job.errors, job.snoozes, job.worker_ids), ([], 1, ["w1"]))
        self.assertFalse(FailedExecution.objects.exists())
        scheduled = ScheduledExecution.objects.get(job=job)
        self.assertGreaterEqual(scheduled.scheduled_at, before + timedelta(seconds=60))
        self.assertLess(scheduled.scheduled_at, before + timedelta(seconds=90))
        fetched = co.snoozer.get_result(result.id)
        self.assertEqual(
            (fetched.status, fetched.attempts, fetched.errors), (TaskResultStatus.READY, 1, [])
        )

    def test_snooze_zero_runs_again_at_once_and_attempts_count_every_run(self) -> None:
        result = co.snoozer.enqueue("twice", times=2, delay=0)
        for worker in ("w1", "w2", "w3"):
            self.assertEqual(run_once(worker), 1)
        fetched = co.snoozer.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(fetched.return_value, 3)
        self.assertEqual(fetched.attempts, 3)
        self.assertEqual(fetched.errors, [])
        self.assertEqual(Job.objects.get().snoozes, 2)
        attempts = LedgerEntry.objects.filter(key="twice").order_by("attempt")
        self.assertEqual(list(attempts.values_list("attempt", flat=True)), [1, 2, 3])

    def test_retries_do_not_count_snoozes(self) -> None:
        """attempts=2: two snoozed runs, then two failures (the first
        retried as attempt 1 of the policy), then FAILED for good."""
        co.BACKOFF_ASKED.clear()
        result = co.snooze_then_fail.enqueue("policy", snoozes=2)
        for worker in ("w1", "w2", "w3", "w4"):
            self.assertEqual(run_once(worker), 1)
        self.assertEqual(run_once("w5"), 0)
        fetched = co.snooze_then_fail.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.FAILED)
        self.assertEqual((fetched.attempts, len(fetched.errors)), (4, 2))
        self.assertEqual(co.BACKOFF_ASKED, [1], "back-off is asked about failure 1, not run 3")

    def test_job_snoozed_and_task_finished_are_sent(self) -> None:
        snoozed: list[tuple[str, Any]] = []
        finished: list[TaskResultStatus] = []

        def on_snooze(sender: type, job: Job, run_at: Any, **kwargs: Any) -> None:
            snoozed.append((job.result_id, run_at))

        def on_finish(sender: type, task_result: Any, **kwargs: Any) -> None:
            finished.append(task_result.status)

        signals.job_snoozed.connect(on_snooze, weak=False)
        self.addCleanup(signals.job_snoozed.disconnect, on_snooze)
        task_finished.connect(on_finish, weak=False)
        self.addCleanup(task_finished.disconnect, on_finish)
        result = co.snoozer.enqueue("signals", delay=30)
        run_once()
        job = Job.objects.get()
        self.assertEqual(snoozed, [(result.id, job.run_after)])
        self.assertEqual(finished, [TaskResultStatus.READY])

    def test_the_statistics_count_the_snoozed_attempt(self) -> None:
        co.snoozer.enqueue("stats", delay=30)
        run_once()
        total = Statistic.objects.totals().get()
        self.assertEqual((total.snoozed, total.failed, total.finished), (1, 0, 0))
        self.assertEqual(sum(total.buckets("run")), 1)

    def test_a_bad_delay_fails_the_job_with_a_clear_error_and_no_snooze(self) -> None:
        for delay, message in (
            (-1, "Snooze() takes a delay from 0 to 365 days, not -1."),
            ("soon", "Snooze() takes seconds or a timedelta, not 'soon'."),
            (366 * 86400, "Snooze() takes a delay from 0 to 365 days"),
        ):
            with self.subTest(delay=delay):
                result = co.snooze_by.enqueue(delay)
                run_once()
                fetched = co.snooze_by.get_result(result.id)
                self.assertEqual(fetched.status, TaskResultStatus.FAILED)
                self.assertIn(message, fetched.errors[0].traceback)
                self.assertEqual(Job.objects.get(result_id=result.id).snoozes, 0)

    def test_a_job_asked_to_cancel_is_cancelled_not_snoozed(self) -> None:
        result = co.snoozer.enqueue("cancel", delay=30)
        (claimed,) = claim()
        ClaimedExecution.objects.filter(pk=claimed.pk).update(
            cancel_requested_at=database_now("default")
        )
        perform(claimed)
        fetched = co.snoozer.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.FAILED)
        self.assertEqual(
            fetched.errors[0].exception_class_path, "robust_queue.exceptions.JobCancelledError"
        )
        self.assertEqual(Job.objects.get().snoozes, 0)

    def test_nothing_is_written_once_the_claim_is_gone(self) -> None:
        """The claim fences the snooze like any finish: a pruned claim's
        job is left as the prune left it."""
        co.snoozer.enqueue("gone")
        (claimed,) = claim()
        ClaimedExecution.objects.filter(pk=claimed.pk).delete()
        self.assertIs(record_snooze(claimed, timedelta(seconds=5)), Finalized.SKIPPED)
        job = Job.objects.get()
        self.assertEqual((job.snoozes, job.run_after), (0, None))
        self.assertFalse(ScheduledExecution.objects.exists())

    def test_snooze_takes_seconds_or_a_timedelta(self) -> None:
        self.assertEqual(robust_queue.Snooze(1.5).delay, timedelta(seconds=1.5))
        self.assertEqual(robust_queue.Snooze(timedelta(hours=2)).delay, timedelta(hours=2))
        self.assertEqual(str(robust_queue.Snooze(90)), "snoozed for 0:01:30")
        with self.assertRaisesMessage(TypeError, "not True"):
            robust_queue.Snooze(True)  # type: ignore[arg-type]
        with self.assertRaisesMessage(ValueError, "from 0 to 365 days, not inf"):
            robust_queue.Snooze(float("inf"))
        with self.assertRaisesMessage(ValueError, "not datetime.timedelta(days=-1"):
            robust_queue.Snooze(timedelta(seconds=-1))


class SnoozeConcurrencyTests(TransactionTestCase):
    def test_a_snoozed_job_gives_its_concurrency_slot_to_the_next(self) -> None:
        """to=1: the second job is blocked while the first runs; the first
        snoozes, and the second becomes ready at once."""
        first = co.limited_snoozer.enqueue("first")
        second = co.limited_snoozer.enqueue("second")
        self.assertTrue(BlockedExecution.objects.filter(job__result_id=second.id).exists())
        (claimed,) = claim()
        self.assertEqual(claimed.job.result_id, first.id)
        perform(claimed)
        self.assertTrue(ScheduledExecution.objects.filter(job__result_id=first.id).exists())
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=second.id).exists())
