"""Rescheduling: a scheduled or failed job moves to a new time; others are
refused with a clear error and left as they were."""

from __future__ import annotations

import datetime as dt
import threading
import time
import unittest
from datetime import timedelta

from django.db import connection, transaction
from django.test import TestCase, TransactionTestCase
from django.utils import timezone

import robust_queue
from robust_queue.compat import TaskResultDoesNotExist, TaskResultStatus
from robust_queue.exceptions import NotReschedulableError
from robust_queue.models import FailedExecution, Job, ReadyExecution, ScheduledExecution, Statistic
from robust_queue.models.clock import database_now
from testproject import tasks
from tests.helpers import claim, run_in_threads, work_off


def _scheduled(hours: float = 1) -> Job:
    result = tasks.add.using(run_after=timezone.now() + timedelta(hours=hours)).enqueue(1, 2)
    return Job.objects.get(result_id=result.id)


def _failed() -> Job:
    result = tasks.fail.enqueue("kaput")
    work_off()
    return Job.objects.get(result_id=result.id)


class RescheduleTests(TestCase):
    def test_a_scheduled_job_moves_to_the_new_time(self) -> None:
        job = _scheduled()
        at = timezone.now() + timedelta(days=2)
        self.assertEqual(job.reschedule(at), at)
        self.assertEqual(ScheduledExecution.objects.get(job=job).scheduled_at, at)
        self.assertEqual(Job.objects.get(pk=job.pk).run_after, at)

    def test_a_time_that_has_passed_makes_the_job_ready_now(self) -> None:
        job = _scheduled()
        job.reschedule(timezone.now() - timedelta(minutes=5))
        self.assertTrue(ReadyExecution.objects.filter(job=job).exists())
        self.assertFalse(ScheduledExecution.objects.filter(job=job).exists())

    def test_a_failed_job_runs_again_at_the_new_time_keeping_its_errors(self) -> None:
        job = _failed()
        at = timezone.now() + timedelta(hours=3)
        robust_queue.reschedule(job.result_id, at)
        self.assertFalse(FailedExecution.objects.filter(job=job).exists())
        self.assertEqual(ScheduledExecution.objects.get(job=job).scheduled_at, at)
        fetched = tasks.fail.get_result(job.result_id)
        self.assertEqual((fetched.status, len(fetched.errors)), (TaskResultStatus.READY, 1))
        self.assertEqual(Statistic.objects.totals().get(task_path=job.task_path).retried, 1)

    def test_a_timedelta_counts_from_the_database_clock(self) -> None:
        job = _scheduled()
        before = database_now("default")
        due = job.reschedule(timedelta(minutes=10))
        self.assertGreaterEqual(due, before + timedelta(minutes=10))
        self.assertLess(due, before + timedelta(minutes=11))

    def test_a_naive_or_bad_time_is_refused_and_nothing_changes(self) -> None:
        job = _scheduled()
        kept = ScheduledExecution.objects.get(job=job).scheduled_at
        for at, error, message in (
            (dt.datetime(2030, 1, 1, 12, 0), ValueError, "needs an aware datetime, not the naive"),
            ("tomorrow", TypeError, "takes an aware datetime or a timedelta, not 'tomorrow'"),
            (timedelta(seconds=-1), ValueError, "takes a timedelta >= 0"),
            (timedelta.max, ValueError, "is past year 9999"),
        ):
            with self.subTest(at=at), self.assertRaisesMessage(error, message):
                robust_queue.reschedule(job.result_id, at)  # type: ignore[arg-type]
        self.assertEqual(ScheduledExecution.objects.get(job=job).scheduled_at, kept)

    def test_running_finished_ready_and_blocked_jobs_are_refused(self) -> None:
        finished = Job.objects.get(result_id=tasks.add.enqueue(1, 1).id)
        work_off()
        ready = Job.objects.get(result_id=tasks.add.enqueue(2, 2).id)
        running = Job.objects.get(result_id=tasks.add.using(queue_name="slow").enqueue(3, 3).id)
        claim(queue_name="slow")
        at = timezone.now() + timedelta(hours=1)
        for job, why in (
            (running, "is running"),
            (finished, "has finished"),
            (ready, "is ready and runs as soon as a worker is free"),
        ):
            with (
                self.subTest(why=why),
                self.assertRaisesMessage(
                    NotReschedulableError, f"Job {job.result_id} {why}; only a scheduled or failed"
                ),
            ):
                job.reschedule(at)
        self.assertTrue(ReadyExecution.objects.filter(job=ready).exists())
        self.assertIsNone(Job.objects.get(pk=ready.pk).run_after)

    def test_unknown_and_malformed_ids_raise_task_result_does_not_exist(self) -> None:
        at = timezone.now()
        for result_id in ("nope", "", "x" * 65, 7):
            with self.subTest(result_id=result_id), self.assertRaises(TaskResultDoesNotExist):
                robust_queue.reschedule(result_id, at)  # type: ignore[arg-type]


@unittest.skipIf(connection.vendor == "sqlite", "SQLite has no row locks")
class RescheduleRaceTests(TransactionTestCase):
    def test_a_dispatch_holding_the_row_wins_and_the_job_keeps_one_state(self) -> None:
        """A dispatcher holds the scheduled row and makes the job ready; a
        reschedule meanwhile skips the locked row, reads again and is
        refused: never two executions, never none."""
        job = _scheduled()
        locked, outcome = threading.Event(), {}

        def dispatch() -> None:
            with transaction.atomic():
                rows = ScheduledExecution.objects.select_for_update().filter(job=job)
                row = rows.select_related("job").get()
                locked.set()
                time.sleep(0.2)
                row.delete()
                Job.objects.dispatch_all([row.job], immediately=True)

        def reschedule() -> None:
            locked.wait(10)
            try:
                job.reschedule(timezone.now() + timedelta(days=1))
                outcome["moved"] = True
            except NotReschedulableError as exc:
                outcome["refused"] = str(exc)

        run_in_threads([dispatch, reschedule])
        self.assertIn("refused", outcome)
        self.assertTrue(ReadyExecution.objects.filter(job=job).exists())
        self.assertFalse(ScheduledExecution.objects.filter(job=job).exists())
