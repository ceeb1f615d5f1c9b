"""Batches: jobs enqueued inside ``with robust_queue.batch(...)`` join it;
once the block has ended and every job has run, the dispatcher completes
it and enqueues its callbacks exactly once, with the batch id."""

from __future__ import annotations

from datetime import timedelta

from django.test import TestCase, override_settings
from django.utils import timezone

import robust_queue
from robust_queue.exceptions import BatchError, EnqueueError
from robust_queue.models import Batch, BatchMember, Job, retention
from robust_queue.processes.config import DispatcherConfig
from robust_queue.processes.dispatcher import Dispatcher
from testproject import tasks
from tests.helpers import work_off

ECHO = tasks.echo.module_path
RECORD = tasks.record.module_path
ADD = tasks.add.module_path


def complete() -> int:
    return Batch.objects.complete_all_in_batches()


def callback_args(path: str) -> list[list[object]]:
    return [job.args for job in Job.objects.filter(task_path=path).order_by("pk")]


class BatchTests(TestCase):
    def test_jobs_enqueued_inside_join_and_callbacks_fire_once_on_success(self) -> None:
        with robust_queue.batch(
            on_success=tasks.echo, on_finish=tasks.record, description="nightly"
        ) as batch:
            tasks.add.enqueue(1, 1)
            robust_queue.enqueue_all([(tasks.add, (2, 2), {}), (tasks.add, (3, 3), {})])
        outside = tasks.add.enqueue(4, 4)
        self.assertEqual(BatchMember.objects.count(), 3)
        self.assertFalse(BatchMember.objects.filter(job__result_id=outside.id).exists())
        progress = robust_queue.Batch.get(batch.batch_id).progress()
        self.assertEqual((progress.total, progress.pending), (3, 3))
        self.assertEqual(complete(), 0)
        work_off()
        self.assertEqual(complete(), 1)
        self.assertEqual(complete(), 0)
        self.assertEqual(callback_args(ECHO), [[batch.batch_id]])
        self.assertEqual(callback_args(RECORD), [[batch.batch_id]])
        stored = Batch.get(batch.batch_id)
        self.assertIs(stored.is_complete, True)
        self.assertEqual((stored.total, stored.succeeded, stored.failed), (3, 3, 0))

    def test_a_failed_job_fires_on_failure_not_on_success(self) -> None:
        with robust_queue.batch(
            on_success=tasks.echo, on_failure=tasks.record, on_finish=tasks.add
        ) as batch:
            tasks.add.enqueue(1, 1)
            tasks.fail.enqueue("boom")
        work_off()
        self.assertEqual(complete(), 1)
        self.assertEqual(callback_args(ECHO), [])
        self.assertEqual(callback_args(RECORD), [[batch.batch_id]])
        self.assertEqual(
            len(Job.objects.filter(task_path=ADD, arguments__args=[batch.batch_id])), 1
        )
        progress = Batch.get(batch.batch_id).progress()
        self.assertEqual((progress.total, progress.succeeded, progress.failed), (2, 1, 1))

    def test_a_batch_is_not_complete_while_its_block_runs(self) -> None:
        with robust_queue.batch(on_finish=tasks.record) as batch:
            tasks.add.enqueue(1, 1)
            work_off()
            self.assertEqual(complete(), 0)
            self.assertIsNone(Batch.get(batch.batch_id).sealed_at)
        self.assertEqual(complete(), 1)

    def test_jobs_added_later_join_until_it_is_complete(self) -> None:
        with robust_queue.batch(on_finish=tasks.record) as batch:
            tasks.add.enqueue(1, 1)
        with batch.add():
            tasks.add.enqueue(2, 2)
        self.assertEqual(batch.progress().total, 2)
        work_off()
        self.assertEqual(complete(), 1)
        with self.assertRaisesMessage(BatchError, "is complete"):
            with batch.add():
                tasks.add.enqueue(3, 3)
        self.assertEqual(Job.objects.filter(task_path=ADD).count(), 2)

    def test_a_discarded_job_counts_as_failed(self) -> None:
        later = timezone.now() + timedelta(hours=1)
        with robust_queue.batch(on_failure=tasks.record) as batch:
            scheduled = tasks.add.using(run_after=later).enqueue(1, 1)
        Job.objects.get(result_id=scheduled.id).discard()
        self.assertEqual(complete(), 1)
        self.assertEqual(callback_args(RECORD), [[batch.batch_id]])

    @override_settings(ROBUST_QUEUE={"preserve_finished_jobs": False})
    def test_a_job_deleted_after_success_counts_as_succeeded(self) -> None:
        with robust_queue.batch(on_success=tasks.record) as batch:
            tasks.add.enqueue(1, 1)
        work_off()
        self.assertEqual(complete(), 1)
        self.assertEqual(callback_args(RECORD), [[batch.batch_id]])

    def test_the_dispatcher_completes_batches(self) -> None:
        with robust_queue.batch(on_finish=tasks.record):
            tasks.add.enqueue(1, 1)
        work_off()
        Dispatcher(DispatcherConfig(), using="default", heartbeat_interval=60).run_once()
        self.assertEqual(len(callback_args(RECORD)), 1)

    def test_an_empty_batch_completes_as_a_success(self) -> None:
        with robust_queue.batch(on_success=tasks.record):
            pass
        self.assertEqual(complete(), 1)
        self.assertEqual(len(callback_args(RECORD)), 1)


class BatchRetentionTests(TestCase):
    def test_complete_batches_are_cleared_as_old_as_finished_jobs(self) -> None:
        """Retention deletes batches completed before the finished-job
        cutoff, with their member rows; recent and incomplete ones stay."""
        with robust_queue.batch(description="old") as old:
            tasks.add.enqueue(1, 1)
        work_off()
        complete()
        with robust_queue.batch(description="recent"):
            pass
        complete()
        with robust_queue.batch(description="running"):
            tasks.add.enqueue(2, 2)
        Batch.objects.filter(pk=old.pk).update(completed_at=timezone.now() - timedelta(days=2))
        retention.clear_expired("default")
        self.assertEqual(
            sorted(Batch.objects.values_list("description", flat=True)), ["recent", "running"]
        )
        self.assertEqual(BatchMember.objects.count(), 1)


class BadBatchTests(TestCase):
    databases = {"default", "queue"}

    def test_a_callback_that_is_not_a_task_is_refused(self) -> None:
        with self.assertRaisesMessage(BatchError, "on_success must be a task"):
            with robust_queue.batch(on_success=print):  # type: ignore[arg-type]
                tasks.add.enqueue(1, 1)
        self.assertFalse(Batch.objects.exists())
        self.assertFalse(Job.objects.exists())

    def test_a_callback_of_another_backend_is_refused(self) -> None:
        with self.assertRaisesMessage(BatchError, "not the batch's 'default'"):
            with robust_queue.batch(
                on_finish=tasks.record.using(backend="separate"), backend="default"
            ):
                pass
        with self.assertRaisesMessage(BatchError, "use one backend"):
            with robust_queue.batch(
                on_finish=tasks.record.using(backend="separate"), on_success=tasks.echo
            ):
                pass
        self.assertFalse(Batch.objects.exists())

    def test_properties_that_are_not_json_are_refused(self) -> None:
        with self.assertRaisesMessage(BatchError, "properties must be JSON"):
            with robust_queue.batch(properties={"when": timezone.now()}):
                pass
        with self.assertRaisesMessage(BatchError, "description must be a string"):
            with robust_queue.batch(description="x" * 300):
                pass
        self.assertFalse(Batch.objects.exists())

    def test_a_job_of_another_backend_cannot_join(self) -> None:
        with self.assertRaisesMessage(BatchError, "cannot join a batch of backend 'default'"):
            with robust_queue.batch():
                tasks.add.using(backend="separate").enqueue(1, 1)
        self.assertFalse(Job.objects.using("queue").exists())
        self.assertTrue(issubclass(BatchError, EnqueueError))

    def test_properties_and_description_are_stored(self) -> None:
        with robust_queue.batch(description="import", properties={"file": "a.csv"}) as batch:
            pass
        stored = robust_queue.Batch.get(batch.batch_id)
        self.assertEqual((stored.description, stored.properties), ("import", {"file": "a.csv"}))
