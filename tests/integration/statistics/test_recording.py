"""Statistics are recorded per (minute, queue, task) when attempts end,
jobs are retried or discarded, and stored by adding, never overwriting."""

from __future__ import annotations

import datetime as dt

from django.db.models import Sum
from django.test import TestCase, TransactionTestCase
from django.utils import timezone

from robust_queue.exceptions import ProcessExitError
from robust_queue.models import ClaimedExecution, FailedExecution, Job, Statistic
from robust_queue.models.statistic import (
    BUCKET_BOUNDS,
    BUCKETS,
    COLUMNS,
    TOTALS_MINUTE,
    bucket_index,
)
from robust_queue.models.statistics import record_attempt, recorder
from testproject import control_tasks, tasks
from tests.helpers import claim, run_in_threads, work_off

TASK_ADD = "testproject.tasks.add"
TASK_FAIL = "testproject.tasks.fail"


def totals(task_path: str, **filters: object) -> dict[str, int]:
    """Sums of the per-minute rows of one task."""
    rows = Statistic.objects.minutes().filter(task_path=task_path, **filters)
    sums = rows.aggregate(**{c: Sum(c) for c in ("finished", "failed", "retried", "discarded")})
    return {key: int(value or 0) for key, value in sums.items()}


def numbers(**changes: float) -> list[float]:
    values = [0.0] * len(COLUMNS)
    for name, amount in changes.items():
        values[COLUMNS.index(name)] = amount
    return values


class BucketTests(TestCase):
    def test_durations_fall_in_log_buckets(self) -> None:
        self.assertEqual(bucket_index(0), 0)
        self.assertEqual(bucket_index(-3), 0)
        self.assertEqual(bucket_index(BUCKET_BOUNDS[0]), 0)
        self.assertEqual(bucket_index(0.006), 1)
        self.assertEqual(bucket_index(7200), BUCKETS - 1)


class RecordingTests(TestCase):
    def test_a_finished_job_counts_with_its_wait_and_run_time(self) -> None:
        tasks.add.enqueue(1, 2)
        work_off()
        row = Statistic.objects.minutes().get(task_path=TASK_ADD)
        self.assertEqual((row.finished, row.failed, row.queue_name), (1, 0, "default"))
        self.assertEqual(sum(row.buckets("wait")), 1)
        self.assertEqual(sum(row.buckets("run")), 1)
        self.assertGreaterEqual(row.run_seconds, 0)
        self.assertEqual(row.minute, row.minute.replace(second=0, microsecond=0))
        total = Statistic.objects.totals().get(task_path=TASK_ADD)
        self.assertEqual((total.finished, total.minute), (1, TOTALS_MINUTE))

    def test_a_failed_attempt_counts_and_a_retried_one_too(self) -> None:
        tasks.fail.enqueue("x")
        control_tasks.flaky.enqueue("k", succeed_on=2)
        work_off()
        self.assertEqual(
            totals(TASK_FAIL), {"finished": 0, "failed": 1, "retried": 0, "discarded": 0}
        )
        flaky = totals("testproject.control_tasks.flaky")
        self.assertEqual(flaky, {"finished": 1, "failed": 1, "retried": 1, "discarded": 0})

    def test_retrying_and_discarding_failed_jobs_count_without_touching_failures(self) -> None:
        for _ in range(3):
            tasks.fail.enqueue("x")
        work_off()
        FailedExecution.objects.all()[:2].retry_all()
        self.assertEqual(totals(TASK_FAIL)["retried"], 2)
        work_off()
        Job.objects.filter(failed_execution__isnull=False).discard_all_in_batches()
        self.assertEqual(
            totals(TASK_FAIL), {"finished": 0, "failed": 5, "retried": 2, "discarded": 3}
        )

    def test_claims_failed_by_the_supervisor_count_as_failed_attempts(self) -> None:
        """A dead worker's jobs: the supervisor writes their failures at once."""
        tasks.add.enqueue(1, 2)
        claim()
        ClaimedExecution.objects.all().fail_all_with(ProcessExitError, "worker died")
        self.assertEqual(totals(TASK_ADD)["failed"], 1)

    def test_a_claim_given_back_to_ready_counts_as_released(self) -> None:
        """A worker's stop gives unfinished claims back: neither finished
        nor failed, but counted, per minute and in the totals."""
        tasks.add.enqueue(1, 2)
        tasks.add.enqueue(3, 4)
        claim()
        self.assertEqual(ClaimedExecution.objects.all().release_all(), 2)
        row = Statistic.objects.minutes().get(task_path=TASK_ADD)
        self.assertEqual((row.released, row.finished, row.failed), (2, 0, 0))
        self.assertEqual(Statistic.objects.totals().get(task_path=TASK_ADD).released, 2)

    def test_discarding_finished_jobs_is_not_counted(self) -> None:
        tasks.add.enqueue(1, 2)
        work_off()
        Job.objects.all().discard_all_in_batches()
        self.assertEqual(totals(TASK_ADD)["discarded"], 0)

    def test_a_buffering_process_writes_nothing_until_it_flushes(self) -> None:
        recorder.start_buffering()
        self.addCleanup(lambda: recorder.is_buffering and recorder.stop_buffering())
        tasks.add.enqueue(1, 2)
        tasks.add.enqueue(3, 4)
        work_off()
        self.assertFalse(Statistic.objects.exists())
        self.assertEqual(recorder.flush(), 1)
        self.assertEqual(totals(TASK_ADD)["finished"], 2)
        self.assertEqual(recorder.flush(), 0)
        recorder.stop_buffering()
        self.assertIs(recorder.is_buffering, False)

    def test_an_attempt_counts_in_the_minute_it_ended_with_its_spans(self) -> None:
        # Recorded directly, with moments chosen: a job due later than it
        # was enqueued waits from its due time; one started before it was
        # due (clocks apart) counts a zero wait, in the first bucket; two
        # attempts a minute apart land in two minutes.
        recorder.start_buffering()
        self.addCleanup(lambda: recorder.is_buffering and recorder.stop_buffering())
        at = dt.datetime(2026, 3, 1, 12, 0, 59, 900000, tzinfo=dt.UTC)
        job = Job(
            queue_name="mail",
            task_path="t",
            enqueued_at=at - dt.timedelta(seconds=60),
            run_after=at - dt.timedelta(seconds=20),
            last_attempted_at=at - dt.timedelta(seconds=2),
        )
        record_attempt(job, using="default", outcome="retried", at=at)
        early = Job(
            queue_name="mail",
            task_path="t",
            enqueued_at=at,
            run_after=None,
            last_attempted_at=at - dt.timedelta(seconds=1),
        )
        later = at + dt.timedelta(seconds=0.2)
        record_attempt(early, using="default", outcome="finished", at=later)
        recorder.flush()
        first, second = Statistic.objects.minutes().order_by("minute")
        self.assertEqual(first.minute, at.replace(second=0, microsecond=0))
        self.assertEqual((first.finished, first.failed, first.retried), (0, 1, 1))
        self.assertAlmostEqual(first.wait_seconds, 18)
        self.assertAlmostEqual(first.run_seconds, 2)
        self.assertEqual(first.buckets("wait")[bucket_index(18)], 1)
        self.assertEqual(first.buckets("run")[bucket_index(2)], 1)
        self.assertEqual(second.minute, first.minute + dt.timedelta(minutes=1))
        self.assertEqual((second.finished, second.failed), (1, 0))
        self.assertEqual((second.wait_seconds, second.buckets("wait")[0]), (0, 1))
        self.assertAlmostEqual(second.run_seconds, 1.2)

    def test_writing_a_key_twice_adds(self) -> None:
        minute = timezone.now().replace(second=0, microsecond=0)
        key = (minute, "Default", "t")
        Statistic.objects.add_all({key: numbers(finished=2, wait_3=2, run_seconds=0.5)})
        Statistic.objects.add_all({key: numbers(finished=3, failed=1, run_seconds=0.25)})
        row = Statistic.objects.minutes().get()
        self.assertEqual((row.finished, row.failed, row.wait_3), (5, 1, 2))
        self.assertAlmostEqual(row.run_seconds, 0.75)
        self.assertEqual(Statistic.objects.totals().get().finished, 5)

    def test_queue_names_that_differ_in_case_are_two_keys(self) -> None:
        minute = timezone.now().replace(second=0, microsecond=0)
        Statistic.objects.add_all(
            {
                (minute, "mail", "t"): numbers(finished=1),
                (minute, "MAIL", "t"): numbers(finished=2),
            }
        )
        self.assertEqual(
            sorted(Statistic.objects.minutes().values_list("queue_name", "finished")),
            [("MAIL", 2), ("mail", 1)],
        )


class ConcurrentUpsertTests(TransactionTestCase):
    def test_two_writers_adding_the_same_keys_lose_nothing(self) -> None:
        """Each thread has its own connection; every count arrives."""
        start = dt.datetime(2031, 1, 1, 12, 0, tzinfo=dt.UTC)
        keys = [(start + dt.timedelta(minutes=m), "default", "t") for m in range(5)]

        def write() -> None:
            for _ in range(40):
                Statistic.objects.add_all({key: numbers(finished=1, run_1=1) for key in keys})

        run_in_threads([write, write])
        rows = Statistic.objects.minutes()
        self.assertEqual(rows.count(), 5)
        self.assertEqual({row.finished for row in rows}, {80})
        self.assertEqual({row.run_1 for row in rows}, {80})
        self.assertEqual(Statistic.objects.totals().get().finished, 400)


class ManyKeysTests(TestCase):
    def test_a_flush_of_many_keys_is_written_in_chunks_all_or_nothing(self) -> None:
        start = dt.datetime(2031, 1, 1, tzinfo=dt.UTC)
        values = {
            (start + dt.timedelta(minutes=m), "default", "t"): numbers(finished=1)
            for m in range(150)
        }
        self.assertEqual(Statistic.objects.add_all(values), 2)
        self.assertEqual(Statistic.objects.minutes().count(), 150)
        self.assertEqual(Statistic.objects.totals().get().finished, 150)


class FlushFailureTests(TransactionTestCase):
    def test_a_flush_that_fails_keeps_the_numbers_for_the_next(self) -> None:
        from unittest import mock

        from django.db import OperationalError

        recorder.start_buffering()
        self.addCleanup(lambda: recorder.is_buffering and recorder.stop_buffering())
        tasks.add.enqueue(1, 2)
        work_off()
        broken = mock.patch(
            "robust_queue.models.statistic._upsert", side_effect=OperationalError("gone")
        )
        with broken, self.assertRaises(OperationalError):
            recorder.flush()
        self.assertFalse(Statistic.objects.exists())
        recorder.flush()
        self.assertEqual(totals(TASK_ADD)["finished"], 1)
