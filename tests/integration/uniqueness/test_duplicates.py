"""A duplicate says so, joins the batch it was enqueued in, and a chain
goes on from the existing job (issue 28 §8).

An enqueue that writes nothing because a ``@unique`` key (or an
``enqueue_once`` key) is taken returns the existing job's result with
``is_duplicate`` set (Oban's ``conflict?``). Inside ``batch()`` the
existing job joins the batch unless it belongs to one already, so the
batch's callbacks wait for it. In a chain the next step waits on the
existing job; the existing job itself is never changed (it does not start
waiting on the duplicate's parents).
"""

from __future__ import annotations

from django.test import TestCase

import robust_queue
from robust_queue.compat import TaskResultStatus
from robust_queue.models import Batch, BatchMember, BlockedExecution, Job, JobDependency
from testproject import tasks, unique_tasks
from tests.helpers import work_off

RECORD = tasks.record.module_path


def complete() -> int:
    return Batch.objects.complete_all_in_batches()


def fired(batch: Batch) -> bool:
    """Whether ``batch``'s on_finish (tasks.record) was enqueued."""
    return Job.objects.filter(task_path=RECORD, arguments__args=[batch.batch_id]).exists()


class DuplicateFlagTests(TestCase):
    def test_a_new_job_is_not_a_duplicate_and_a_second_enqueue_is(self) -> None:
        first = unique_tasks.by_arguments.enqueue(1)
        again = unique_tasks.by_arguments.enqueue(1)
        self.assertIs(first.is_duplicate, False)
        self.assertIs(again.is_duplicate, True)
        self.assertEqual(again.id, first.id)
        self.assertEqual(Job.objects.count(), 1)
        # Not compared: the same job's result equals itself.
        self.assertEqual(again, tasks.add.get_backend().get_result(first.id))
        self.assertIs(tasks.add.get_backend().get_result(first.id).is_duplicate, False)

    def test_enqueue_all_flags_duplicates_of_stored_jobs_and_of_its_own(self) -> None:
        stored = unique_tasks.by_arguments.enqueue(1)
        results = robust_queue.enqueue_all(
            [
                (unique_tasks.by_arguments, (1,), {}),
                (unique_tasks.by_arguments, (2,), {}),
                (unique_tasks.by_arguments, (2,), {}),
                (tasks.add, (1, 1), {}),
            ]
        )
        self.assertEqual([r.is_duplicate for r in results], [True, False, True, False])
        self.assertEqual(results[0].id, stored.id)
        self.assertEqual(results[2].id, results[1].id)

    def test_enqueue_once_flags_a_used_key(self) -> None:
        once = robust_queue.enqueue_once(tasks.add, "request-1", 1, 2)
        again = robust_queue.enqueue_once(tasks.add, "request-1", 1, 2)
        self.assertEqual((once.is_duplicate, again.is_duplicate), (False, True))
        self.assertEqual(again.id, once.id)


class DuplicateInBatchTests(TestCase):
    def test_the_existing_job_joins_and_the_batch_waits_for_it(self) -> None:
        """Before: the batch sealed without it and fired at once."""
        existing = unique_tasks.by_arguments.enqueue(7)
        with robust_queue.batch(on_finish=tasks.record) as batch:
            duplicate = unique_tasks.by_arguments.enqueue(7)
        self.assertIs(duplicate.is_duplicate, True)
        self.assertEqual(
            list(BatchMember.objects.filter(batch=batch).values_list("job__result_id", flat=True)),
            [existing.id],
        )
        self.assertEqual(Batch.get(batch.batch_id).progress().pending, 1)
        self.assertEqual(complete(), 0)
        self.assertIs(fired(batch), False)
        work_off()
        self.assertEqual(complete(), 1)
        self.assertIs(fired(batch), True)
        stored = Batch.get(batch.batch_id)
        self.assertEqual((stored.total, stored.succeeded), (1, 1))

    def test_a_duplicate_of_a_job_written_in_the_same_batch_joins_once(self) -> None:
        with robust_queue.batch(on_finish=tasks.record) as batch:
            first = unique_tasks.by_arguments.enqueue(8)
            again = unique_tasks.by_arguments.enqueue(8)
            robust_queue.enqueue_all([(unique_tasks.by_arguments, (8,), {})])
        self.assertEqual((first.is_duplicate, again.is_duplicate), (False, True))
        self.assertEqual(BatchMember.objects.filter(batch=batch).count(), 1)

    def test_a_job_of_another_batch_stays_there(self) -> None:
        """A job belongs to one batch: the second batch does not count it."""
        with robust_queue.batch(on_finish=tasks.record) as first:
            unique_tasks.by_arguments.enqueue(9)
        with robust_queue.batch(on_finish=tasks.record) as second:
            duplicate = unique_tasks.by_arguments.enqueue(9)
        self.assertIs(duplicate.is_duplicate, True)
        self.assertEqual(BatchMember.objects.get().batch_id, first.pk)
        self.assertEqual(Batch.get(second.batch_id).progress().total, 0)

    def test_a_finished_job_that_still_counts_joins_as_succeeded(self) -> None:
        """within=: the key's finished job stands for the work; the batch
        counts it done."""
        unique_tasks.within_ten_minutes.enqueue(1)
        work_off()
        with robust_queue.batch(on_finish=tasks.record) as batch:
            duplicate = unique_tasks.within_ten_minutes.enqueue(2)
        self.assertEqual((duplicate.is_duplicate, duplicate.status), (True, "SUCCESSFUL"))
        self.assertEqual(complete(), 1)
        stored = Batch.get(batch.batch_id)
        self.assertEqual((stored.total, stored.succeeded, stored.failed), (1, 1, 0))


class DuplicateInChainTests(TestCase):
    def test_enqueue_after_returns_the_existing_job_unchanged(self) -> None:
        existing = unique_tasks.by_arguments.enqueue(5)
        parent = tasks.add.enqueue(1, 1)
        duplicate = robust_queue.enqueue_after([parent], unique_tasks.by_arguments, (5,))
        self.assertIs(duplicate.is_duplicate, True)
        self.assertEqual(duplicate.id, existing.id)
        # The existing job does not start waiting on the new parent.
        self.assertFalse(JobDependency.objects.exists())
        self.assertFalse(BlockedExecution.objects.exists())

    def test_the_next_step_waits_on_the_existing_job(self) -> None:
        existing = unique_tasks.by_arguments.enqueue(6)
        first, middle, last = robust_queue.chain(
            [
                (tasks.add, (1, 1), {}),
                (unique_tasks.by_arguments, (6,), {}),
                (tasks.add, (2, 2), {}),
            ]
        )
        self.assertEqual([r.is_duplicate for r in (first, middle, last)], [False, True, False])
        self.assertEqual(middle.id, existing.id)
        [dependency] = JobDependency.objects.filter(job__result_id=last.id)
        self.assertEqual(dependency.parent.result_id, existing.id)
        # The existing job runs (before its chain's first step, too); the
        # last step is released once it has succeeded.
        Job.objects.get(result_id=first.id)
        work_off()
        JobDependency.objects.release_all_in_batches()
        work_off()
        self.assertEqual(tasks.add.get_result(last.id).status, TaskResultStatus.SUCCESSFUL)


class BatchIdTests(TestCase):
    def test_a_batch_has_one_id(self) -> None:
        """``batch.id`` is the id callbacks are given and ``Batch.get``
        finds; the row key stays ``pk`` (the admin's addresses)."""
        with robust_queue.batch(on_finish=tasks.record) as batch:
            tasks.add.enqueue(1, 2)
        work_off()
        self.assertEqual(Batch.objects.complete_all_in_batches(), 1)  # the dispatcher's pass
        callback = Job.objects.get(task_path="testproject.tasks.record")
        self.assertEqual(callback.arguments["args"], [batch.id])
        self.assertEqual(batch.id, batch.batch_id)
        self.assertIsInstance(batch.id, str)
        self.assertEqual(Batch.get(batch.id).pk, batch.pk)
        self.assertEqual(Batch.get(batch.pk).id, batch.id)
        self.assertEqual(Batch.objects.get(pk=batch.pk).id, batch.id)
        with self.assertRaises(Batch.DoesNotExist):
            Batch.get(batch.pk + 1000)
        with self.assertRaises(Batch.DoesNotExist):
            Batch.get(batch.id + "x")
