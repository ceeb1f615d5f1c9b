"""Unique jobs: duplicates return the existing job; states and within."""

from __future__ import annotations

from datetime import timedelta
from unittest import skipUnless

from asgiref.sync import async_to_sync
from django.db import transaction
from django.test import TestCase
from django.utils import timezone

import robust_queue
from robust_queue.compat import (
    TASK_TAKES_OPTIONS,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_enqueued,
)
from robust_queue.exceptions import EnqueueError
from robust_queue.models import FailedExecution, Job, ReadyExecution, UniqueKey, retention
from robust_queue.options.uniqueness import Uniqueness
from testproject import unique_tasks as ut
from tests.helpers import claim, work_off


class SignalCounter:
    def __init__(self) -> None:
        self.ids: list[str] = []

    def __call__(self, sender: object, task_result: object, **kwargs: object) -> None:
        self.ids.append(task_result.id)  # type: ignore[attr-defined]


class DuplicateTests(TestCase):
    def test_a_duplicate_returns_the_waiting_job_and_writes_nothing(self) -> None:
        counter = SignalCounter()
        task_enqueued.connect(counter)
        self.addCleanup(task_enqueued.disconnect, counter)
        first = ut.by_arguments.enqueue(1, label="a")
        with self.assertNumQueries(3):  # upsert, locking read, holder
            again = ut.by_arguments.enqueue(1, label="a")
        self.assertEqual(again.id, first.id)
        self.assertEqual(again.status, TaskResultStatus.READY)
        self.assertIs(again.task.func, ut.by_arguments.func)
        self.assertEqual((again.args, again.kwargs), ([1], {"label": "a"}))
        self.assertEqual(Job.objects.count(), 1)
        self.assertEqual(UniqueKey.objects.count(), 1)
        self.assertEqual(counter.ids, [first.id])

    def test_other_arguments_are_another_job(self) -> None:
        a = ut.by_arguments.enqueue(1)
        b = ut.by_arguments.enqueue(2)
        c = ut.by_arguments.enqueue(1, label="x")
        self.assertEqual(len({a.id, b.id, c.id}), 3)

    def test_a_key_callable_picks_what_counts(self) -> None:
        a = ut.per_account.enqueue("acme", 1)
        self.assertEqual(ut.per_account.enqueue("acme", n=2).id, a.id)
        self.assertNotEqual(ut.per_account.enqueue("zeta", 1).id, a.id)

    def test_a_running_job_counts_and_its_result_says_running(self) -> None:
        first = ut.by_arguments.enqueue(5)
        claim()
        again = ut.by_arguments.enqueue(5)
        self.assertEqual((again.id, again.status), (first.id, TaskResultStatus.RUNNING))

    def test_a_finished_job_does_not_count_without_within(self) -> None:
        first = ut.by_arguments.enqueue(5)
        work_off()
        second = ut.by_arguments.enqueue(5)
        self.assertNotEqual(second.id, first.id)
        self.assertEqual(second.status, TaskResultStatus.READY)
        self.assertEqual(UniqueKey.objects.get().result_id, second.id)

    def test_a_scheduled_job_counts(self) -> None:
        later = timezone.now() + timedelta(hours=1)
        first = ut.by_arguments.using(run_after=later).enqueue(9)
        self.assertEqual(ut.by_arguments.enqueue(9).id, first.id)
        self.assertFalse(ReadyExecution.objects.exists())

    def test_using_copies_keep_the_option(self) -> None:
        first = ut.by_arguments.enqueue(3)
        self.assertEqual(ut.by_arguments.using(priority=7).enqueue(3).id, first.id)

    def test_a_rolled_back_enqueue_leaves_the_key_free(self) -> None:
        with self.assertRaises(RuntimeError), transaction.atomic():
            ut.by_arguments.enqueue(4)
            raise RuntimeError("roll back")
        self.assertFalse(UniqueKey.objects.exists())
        result = ut.by_arguments.enqueue(4)
        self.assertEqual(Job.objects.get().result_id, result.id)

    def test_a_discarded_holder_frees_the_key(self) -> None:
        first = ut.by_arguments.enqueue(6)
        Job.objects.get(result_id=first.id).discard()
        second = ut.by_arguments.enqueue(6)
        self.assertNotEqual(second.id, first.id)
        self.assertEqual(second.status, TaskResultStatus.READY)

    def test_a_key_that_cannot_be_computed_writes_nothing(self) -> None:
        with self.assertRaisesMessage(EnqueueError, "could not be computed"):
            ut.per_account.enqueue()
        self.assertFalse(Job.objects.exists())
        self.assertFalse(UniqueKey.objects.exists())

    def test_async_enqueue_dedupes_too(self) -> None:
        first = async_to_sync(ut.by_arguments.aenqueue)(8)
        self.assertEqual(async_to_sync(ut.by_arguments.aenqueue)(8).id, first.id)


class StatesAndWithinTests(TestCase):
    def test_within_counts_a_finished_job_until_it_passes(self) -> None:
        first = ut.within_ten_minutes.enqueue(1)
        work_off()
        again = ut.within_ten_minutes.enqueue(2)
        self.assertEqual(again.id, first.id)
        self.assertEqual(again.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(again.return_value, 1)
        Job.objects.update(finished_at=timezone.now() - timedelta(minutes=11))
        later = ut.within_ten_minutes.enqueue(3)
        self.assertNotEqual(later.id, first.id)
        self.assertEqual(Job.objects.count(), 2)

    def test_a_waiting_only_key_lets_a_job_in_while_one_runs(self) -> None:
        first = ut.while_waiting.enqueue(1)
        self.assertEqual(ut.while_waiting.enqueue(2).id, first.id)
        claim()
        second = ut.while_waiting.enqueue(3)
        self.assertNotEqual(second.id, first.id)
        self.assertEqual(ut.while_waiting.enqueue(4).id, second.id)

    def test_failed_counts_for_within_when_listed(self) -> None:
        first = ut.failing.enqueue(1)
        work_off()
        again = ut.failing.enqueue(2)
        self.assertEqual((again.id, again.status), (first.id, TaskResultStatus.FAILED))
        FailedExecution.objects.update(created_at=timezone.now() - timedelta(hours=2))
        self.assertNotEqual(ut.failing.enqueue(3).id, first.id)


class BulkTests(TestCase):
    def test_enqueue_all_applies_the_key_per_item(self) -> None:
        existing = ut.by_arguments.enqueue(1)
        results = robust_queue.enqueue_all(
            [
                (ut.by_arguments, (1,), {}),
                (ut.by_arguments, (2,), {}),
                (ut.plain, (1,), {}),
                (ut.by_arguments, (2,), {}),
                (ut.plain, (1,), {}),
            ]
        )
        self.assertEqual(results[0].id, existing.id)
        self.assertEqual(results[3].id, results[1].id)
        self.assertNotEqual(results[2].id, results[4].id)
        self.assertEqual([r.status for r in results], [TaskResultStatus.READY] * 5)
        self.assertEqual(Job.objects.count(), 4)
        self.assertEqual(UniqueKey.objects.count(), 2)
        for result in results:
            self.assertEqual(ut.plain.get_backend().get_result(result.id).id, result.id)

    def test_a_bad_item_writes_nothing(self) -> None:
        with self.assertRaises(EnqueueError):
            robust_queue.enqueue_all([(ut.by_arguments, (1,), {}), (ut.per_account, (), {})])
        self.assertFalse(Job.objects.exists())
        self.assertFalse(UniqueKey.objects.exists())


class UniqueWithConcurrencyLimitTests(TestCase):
    def test_the_key_is_checked_before_the_limit(self) -> None:
        first = ut.unique_and_discarding.enqueue(1)
        self.assertEqual(ut.unique_and_discarding.enqueue(1).id, first.id)

    def test_a_job_the_limit_discarded_does_not_keep_the_key(self) -> None:
        ut.unique_and_discarding.enqueue(1)
        dropped = ut.unique_and_discarding.enqueue(2)
        self.assertEqual(dropped.status, TaskResultStatus.FAILED)
        work_off()  # the slot is free again
        second = ut.unique_and_discarding.enqueue(2)
        self.assertNotEqual(second.id, dropped.id)
        self.assertEqual(second.status, TaskResultStatus.READY)


class EnqueueOnceTests(TestCase):
    def test_an_idempotency_key_returns_its_job_in_any_state(self) -> None:
        first = robust_queue.enqueue_once(ut.plain, "order-42", 1)
        self.assertEqual(robust_queue.enqueue_once(ut.plain, "order-42", 2).id, first.id)
        work_off()
        again = robust_queue.enqueue_once(ut.plain, "order-42", 3)
        self.assertEqual((again.id, again.status), (first.id, TaskResultStatus.SUCCESSFUL))
        self.assertEqual(Job.objects.count(), 1)

    def test_keys_are_per_task_and_apart_from_unique_keys(self) -> None:
        a = robust_queue.enqueue_once(ut.plain, "k", 1)
        b = robust_queue.enqueue_once(ut.by_arguments, "k", 1)
        c = ut.by_arguments.enqueue(1)
        self.assertEqual(len({a.id, b.id, c.id}), 3)

    def test_the_key_is_free_once_the_job_is_cleared(self) -> None:
        first = robust_queue.enqueue_once(ut.plain, "order-7", 1)
        work_off()
        Job.objects.all().delete()
        self.assertEqual(UniqueKey.objects.clear_orphaned_in_batches(), 1)
        second = robust_queue.enqueue_once(ut.plain, "order-7", 1)
        self.assertNotEqual(second.id, first.id)

    def test_async(self) -> None:
        first = async_to_sync(robust_queue.aenqueue_once)(ut.plain, "a", 1)
        self.assertEqual(async_to_sync(robust_queue.aenqueue_once)(ut.plain, "a", 1).id, first.id)

    def test_bad_calls_are_clear_errors(self) -> None:
        cases = [
            ((ut.plain, ""), "must be a non-empty string, not ''"),
            ((ut.plain, 42), "must be a non-empty string, not 42"),
            ((ut.plain.func, "k"), "takes a Task"),
        ]
        for call, message in cases:
            with self.subTest(message=message), self.assertRaisesMessage(EnqueueError, message):
                robust_queue.enqueue_once(*call)
        self.assertFalse(Job.objects.exists())


class CleanupTests(TestCase):
    def test_keys_of_jobs_that_are_gone_are_cleared(self) -> None:
        kept = ut.by_arguments.enqueue(1)
        gone = ut.by_arguments.enqueue(2)
        Job.objects.filter(result_id=gone.id).delete()
        self.assertEqual(UniqueKey.objects.clear_orphaned_in_batches(batch_size=1), 1)
        self.assertEqual(UniqueKey.objects.get().result_id, kept.id)

    def test_maintenance_clears_keys_of_jobs_that_are_gone(self) -> None:
        ut.by_arguments.enqueue(1)
        Job.objects.all().delete()
        retention.clear_expired("default")
        self.assertFalse(UniqueKey.objects.exists())

    def test_get_result_of_a_duplicate_is_the_holder(self) -> None:
        first = ut.by_arguments.enqueue(1)
        again = ut.by_arguments.enqueue(1)
        self.assertEqual(ut.by_arguments.get_result(again.id).id, first.id)
        Job.objects.all().delete()
        with self.assertRaises(TaskResultDoesNotExist):
            ut.by_arguments.get_result(first.id)


@skipUnless(TASK_TAKES_OPTIONS, "Django 6.0's @task takes no extra keywords")
class TaskKeywordTests(TestCase):
    def test_the_keyword_builds_the_same_option(self) -> None:
        self.assertIsInstance(ut.by_keyword.unique, Uniqueness)
        a = ut.by_keyword.enqueue(1)
        self.assertEqual(ut.by_keyword.enqueue(3).id, a.id)
        self.assertNotEqual(ut.by_keyword.enqueue(2).id, a.id)

    def test_unique_true_keys_on_all_arguments(self) -> None:
        a = ut.by_keyword_default.enqueue(1)
        self.assertEqual(ut.by_keyword_default.enqueue(1).id, a.id)
        self.assertNotEqual(ut.by_keyword_default.enqueue(2).id, a.id)


class CollationTests(TestCase):
    def test_key_columns_compare_byte_exact_on_mysql(self) -> None:
        """Compared with the job's binary result id: the same collation."""
        from importlib import import_module

        from django.db import connection

        if connection.vendor != "mysql":
            self.skipTest("only MySQL/MariaDB collations ignore case")
        collation = import_module("robust_queue.migrations.0004_binary_collation")
        ours = import_module("robust_queue.migrations.0005_unique_jobs")
        with connection.cursor() as cursor:
            for table, column in ours.COLUMNS:
                cursor.execute(
                    "SELECT COLLATION_NAME FROM information_schema.COLUMNS "
                    "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s AND COLUMN_NAME = %s",
                    [table, column],
                )
                with self.subTest(column=column):
                    self.assertEqual(cursor.fetchone(), (collation.binary_collation(connection),))


class RecurringTests(TestCase):
    def test_a_slot_whose_previous_run_still_waits_gets_that_job(self) -> None:
        """Recurring enqueues go through the task's key: no pile-up."""
        from datetime import UTC, datetime

        from robust_queue.models import RecurringExecution, RecurringTask

        definition = RecurringTask.objects.create(
            key="sync-acme",
            schedule="@hourly",
            static=False,
            task_path="testproject.unique_tasks.per_account",
            arguments={"args": ["acme"], "kwargs": {}},
        )
        first = definition.enqueue(datetime(2031, 1, 1, 3, 0, tzinfo=UTC))
        second = definition.enqueue(datetime(2031, 1, 1, 4, 0, tzinfo=UTC))
        assert first is not None and second is not None
        self.assertEqual(second.pk, first.pk)
        self.assertEqual(Job.objects.count(), 1)
        self.assertEqual(RecurringExecution.objects.filter(job=first).count(), 2)
