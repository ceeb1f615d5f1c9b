"""Claiming ready jobs: order, what a claim records, and its cost."""

from __future__ import annotations

from unittest import skipUnless

from django.db import connection
from django.test import TestCase

from robust_queue.models import ClaimedExecution, Job, ReadyExecution
from robust_queue.models.statistics import recorder
from testproject import tasks
from tests.helpers import claim, make_process


class ClaimTests(TestCase):
    def test_a_batch_comes_back_highest_priority_first_then_oldest(self) -> None:
        low = tasks.add.using(priority=-5).enqueue(1, 1)
        first_high = tasks.add.using(priority=50).enqueue(1, 1)
        middle = tasks.add.enqueue(1, 1)
        second_high = tasks.add.using(priority=50).enqueue(1, 1)
        claimed = claim(10)
        self.assertEqual(
            [row.job.result_id for row in claimed],
            [first_high.id, second_high.id, middle.id, low.id],
        )

    def test_a_claim_moves_the_row_and_stamps_the_job(self) -> None:
        process = make_process()
        result = tasks.add.enqueue(1, 2)
        [claimed] = claim(process=process, worker_id="w-1")
        self.assertFalse(ReadyExecution.objects.exists())
        stored = ClaimedExecution.objects.get()
        self.assertEqual((stored.pk, stored.process_id), (claimed.pk, process.pk))
        job = Job.objects.get(result_id=result.id)
        self.assertEqual(job.worker_ids, ["w-1"])
        self.assertIsNotNone(job.started_at)
        self.assertEqual(job.last_attempted_at, job.started_at)
        self.assertEqual(claimed.job.worker_ids, ["w-1"])
        self.assertEqual(claimed.job.arguments, job.arguments)

    def test_a_claimed_job_is_read_as_a_query_would_read_it(self) -> None:
        """The job a claim returns (built from the claim's own rows) has
        every field converted from the database's types: JSON, aware
        datetimes, and is bound to the queue's database."""
        result = tasks.add.using(priority=7).enqueue(1, 2)
        Job.objects.filter(result_id=result.id).update(metadata={"trace": ["a", 1]})
        [claimed] = claim(worker_id="w-1")
        stored = Job.objects.get(result_id=result.id)
        for field in Job._meta.concrete_fields:
            with self.subTest(field.attname):
                self.assertEqual(
                    getattr(claimed.job, field.attname), getattr(stored, field.attname)
                )
        self.assertEqual(claimed.job.metadata, {"trace": ["a", 1]})
        assert claimed.job.started_at is not None
        self.assertIsNotNone(claimed.job.started_at.tzinfo)
        self.assertEqual((claimed.job._state.db, claimed.job._state.adding), ("default", False))

    def test_a_second_attempt_keeps_the_first_start_time(self) -> None:
        result = tasks.add.enqueue(1, 2)
        [first] = claim(worker_id="w-1")
        first.release()
        [second] = claim(worker_id="w-2")
        job = Job.objects.get(result_id=result.id)
        self.assertEqual(job.worker_ids, ["w-1", "w-2"])
        self.assertEqual(job.started_at, first.job.started_at)
        self.assertGreater(job.last_attempted_at, job.started_at)
        self.assertEqual(second.job.worker_ids, ["w-1", "w-2"])

    def test_excluded_queues_are_not_claimed(self) -> None:
        tasks.add.enqueue(1, 1)
        tasks.report.enqueue(1)
        [claimed] = ReadyExecution.objects.claim(
            5, process_id=None, worker_id="w", exclude_queues=["default"]
        )
        self.assertEqual(claimed.job.queue_name, "reports")
        self.assertEqual(ReadyExecution.objects.get().queue_name, "default")

    @skipUnless(connection.vendor == "postgresql", "one-statement transitions are PostgreSQL's")
    def test_claim_and_finish_are_one_statement_each_on_postgresql(self) -> None:
        for i in range(3):
            tasks.add.enqueue(i, 1)
        # As in a worker: statistics wait in memory for the next flush.
        recorder.start_buffering()
        self.addCleanup(recorder.stop_buffering)
        with self.assertNumQueries(1):
            claimed = claim(3)
        with self.assertNumQueries(1):
            self.assertIs(claimed[0].finish(1), True)
        with self.assertNumQueries(1):
            self.assertIs(claimed[0].finish(2), False)
        job = Job.objects.get(pk=claimed[0].job_id)
        self.assertEqual(job.return_value, 1)
        self.assertIsNotNone(job.finished_at)
