"""Editing a waiting job: its arguments, priority, queue, due time and
tags change, and its execution row with it; a job that started or ended,
and any bad value, is refused with a clear error and nothing written."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from cryptography.fernet import Fernet
from django.test import TestCase, override_settings
from django.utils import timezone

import robust_queue
from robust_queue.compat import InvalidTask, TaskResultDoesNotExist, TaskResultStatus
from robust_queue.exceptions import (
    NotEditableError,
    PayloadTooLargeError,
)
from robust_queue.models import (
    BlockedExecution,
    Job,
    JobDependency,
    JobTag,
    ReadyExecution,
    ScheduledExecution,
    Semaphore,
)
from robust_queue.options.sealing import is_sealed
from robust_queue.running.performing import perform
from testproject import control_tasks as ct
from testproject import coordination_tasks as coordination
from testproject import encrypted_tasks, tasks, unique_tasks
from tests.helpers import claim, work_off

ENCRYPTION_KEY = Fernet.generate_key().decode()


def _job(result_id: str) -> Job:
    return Job.objects.with_executions().get(result_id=result_id)


def _snapshot(result_id: str) -> tuple[object, ...]:
    """Everything an edit may write, to show a refused one wrote nothing."""
    job = _job(result_id)
    execution = job.execution
    return (
        job.arguments,
        job.priority,
        job.queue_name,
        job.run_after,
        job.tag_names(),
        type(execution).__name__,
        getattr(execution, "queue_name", None),
        getattr(execution, "priority", None),
        getattr(execution, "scheduled_at", None),
    )


class EditReadyJobTests(TestCase):
    def test_each_field_changes_on_the_job_and_its_ready_row(self) -> None:
        result = tasks.add.enqueue(1, 2)
        edited = robust_queue.edit_job(
            result.id, args=[40, 2], priority=7, queue_name="urgent", tags=["b", "a", "b"]
        )
        self.assertEqual(edited.id, result.id)
        self.assertEqual(edited.args, [40, 2])
        self.assertEqual(edited.status, TaskResultStatus.READY)
        job = _job(result.id)
        self.assertEqual(job.arguments, {"args": [40, 2], "kwargs": {}})
        self.assertEqual((job.priority, job.queue_name), (7, "urgent"))
        self.assertEqual(job.tag_names(), ["a", "b"])
        ready = ReadyExecution.objects.get(job=job)
        self.assertEqual((ready.queue_name, ready.priority), ("urgent", 7))
        [claimed] = claim(queue_name="urgent")
        self.assertIs(perform(claimed), True)
        self.assertEqual(tasks.add.get_result(result.id).return_value, 42)

    def test_fields_left_out_are_kept(self) -> None:
        result = tasks.echo.using(priority=3).enqueue(1, flag=True)
        robust_queue.edit_job(result.id, kwargs={"flag": False})
        job = _job(result.id)
        self.assertEqual(job.arguments, {"args": [1], "kwargs": {"flag": False}})
        self.assertEqual((job.priority, job.queue_name, job.run_after), (3, "default", None))
        robust_queue.edit_job(result.id, args=("x", {"d": timedelta(seconds=2)}))
        self.assertEqual(
            _job(result.id).arguments,
            {
                "args": ["x", {"d": {"__rq__": "timedelta", "v": [0, 2, 0]}}],
                "kwargs": {"flag": False},
            },
        )

    def test_tags_are_replaced(self) -> None:
        result = coordination.tagged.enqueue(1)
        robust_queue.edit_job(result.id, tags=["new"])
        self.assertEqual(_job(result.id).tag_names(), ["new"])
        robust_queue.edit_job(result.id, tags=[])
        self.assertFalse(JobTag.objects.exists())

    def test_a_later_run_after_schedules_a_ready_job(self) -> None:
        result = tasks.add.enqueue(1, 2)
        at = timezone.now() + timedelta(hours=3)
        robust_queue.edit_job(result.id, run_after=at)
        job = _job(result.id)
        self.assertEqual(job.run_after, at)
        self.assertEqual(ScheduledExecution.objects.get(job=job).scheduled_at, at)
        self.assertFalse(ReadyExecution.objects.exists())
        self.assertEqual(claim(), [])

    def test_a_ready_job_that_is_scheduled_gives_its_slot_to_the_next(self) -> None:
        first = ct.limited.enqueue("acme", "a")
        ct.limited.enqueue("acme", "b")
        third = ct.limited.enqueue("acme", "c")
        self.assertTrue(BlockedExecution.objects.filter(job__result_id=third.id).exists())
        robust_queue.edit_job(first.id, run_after=timedelta(hours=1))
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=third.id).exists())
        self.assertTrue(ScheduledExecution.objects.filter(job__result_id=first.id).exists())
        self.assertEqual(Semaphore.objects.get().value, 0)

    def test_async_twin(self) -> None:
        from asgiref.sync import async_to_sync

        result = tasks.add.enqueue(1, 2)
        edited = async_to_sync(robust_queue.aedit_job)(result.id, priority=-4)
        self.assertEqual(_job(edited.id).priority, -4)


class EditScheduledAndBlockedTests(TestCase):
    def test_a_scheduled_job_moves_to_its_new_time(self) -> None:
        result = tasks.add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(1, 2)
        robust_queue.edit_job(result.id, run_after=timedelta(days=1), priority=9)
        row = ScheduledExecution.objects.get(job__result_id=result.id)
        self.assertGreater(row.scheduled_at, timezone.now() + timedelta(hours=23))
        self.assertEqual(row.scheduled_at, _job(result.id).run_after)
        self.assertEqual(row.priority, 9)

    def test_a_scheduled_job_due_now_is_dispatched(self) -> None:
        result = tasks.add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(1, 2)
        robust_queue.edit_job(result.id, run_after=None)
        self.assertIsNone(_job(result.id).run_after)
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=result.id).exists())
        self.assertFalse(ScheduledExecution.objects.exists())

    def test_a_scheduled_job_keeps_its_time_when_only_its_queue_changes(self) -> None:
        result = tasks.add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(1, 2)
        before = ScheduledExecution.objects.get().scheduled_at
        robust_queue.edit_job(result.id, queue_name="later")
        row = ScheduledExecution.objects.get()
        self.assertEqual((row.queue_name, row.scheduled_at), ("later", before))

    def test_a_blocked_job_changes_in_place_or_is_scheduled(self) -> None:
        ct.limited.enqueue("acme", "a")
        ct.limited.enqueue("acme", "b")
        blocked = ct.limited.enqueue("acme", "c")
        robust_queue.edit_job(blocked.id, priority=5, queue_name="other")
        row = BlockedExecution.objects.get(job__result_id=blocked.id)
        self.assertEqual((row.priority, row.queue_name), (5, "other"))
        robust_queue.edit_job(blocked.id, run_after=timedelta(hours=1))
        self.assertFalse(BlockedExecution.objects.exists())
        self.assertTrue(ScheduledExecution.objects.filter(job__result_id=blocked.id).exists())

    def test_a_job_waiting_on_another_keeps_waiting_with_its_new_time(self) -> None:
        parent = tasks.add.enqueue(1, 1)
        child = robust_queue.enqueue_after([parent.id], tasks.add, (2, 2))
        at = timezone.now() + timedelta(hours=2)
        robust_queue.edit_job(child.id, run_after=at)
        self.assertTrue(BlockedExecution.objects.filter(job__result_id=child.id).exists())
        work_off()
        self.assertEqual(JobDependency.objects.release_all_in_batches(), 1)
        self.assertEqual(ScheduledExecution.objects.get(job__result_id=child.id).scheduled_at, at)


class RefusedEditTests(TestCase):
    def test_a_running_job_is_refused_and_left_alone(self) -> None:
        result = tasks.add.enqueue(1, 2)
        claim()
        with self.assertRaisesMessage(NotEditableError, f"Job {result.id} is running"):
            robust_queue.edit_job(result.id, priority=5)
        self.assertEqual(_job(result.id).priority, 0)

    def test_finished_and_failed_jobs_are_refused(self) -> None:
        done, failed = tasks.add.enqueue(1, 2), tasks.fail.enqueue("x")
        work_off()
        with self.assertRaisesMessage(NotEditableError, "has finished"):
            robust_queue.edit_job(done.id, priority=5)
        with self.assertRaisesMessage(NotEditableError, "has failed"):
            robust_queue.edit_job(failed.id, tags=["x"])

    def test_an_unknown_id(self) -> None:
        for result_id in ("nope", "", "x" * 65, 5):
            with (
                self.subTest(result_id=result_id),
                self.assertRaises(TaskResultDoesNotExist),
            ):
                robust_queue.edit_job(result_id, priority=1)  # type: ignore[arg-type]

    def test_bad_values_are_refused_before_anything_is_written(self) -> None:
        result = tasks.add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(1, 2)
        before = _snapshot(result.id)
        cases = [
            ({}, ValueError, "was given nothing to change"),
            ({"priority": 101}, InvalidTask, "priority must be a whole number"),
            ({"priority": True}, InvalidTask, "priority must be a whole number"),
            ({"priority": "5"}, InvalidTask, "priority must be a whole number"),
            ({"queue_name": "no spaces"}, InvalidTask, "Queue name 'no spaces' is invalid"),
            ({"queue_name": "q" * 65}, InvalidTask, "longer than 64 characters"),
            ({"run_after": datetime(2030, 1, 1)}, ValueError, "needs an aware datetime"),
            ({"run_after": timedelta(-1)}, ValueError, "takes a timedelta >= 0"),
            ({"run_after": "tomorrow"}, TypeError, "takes an aware datetime or a timedelta"),
            ({"args": "12"}, TypeError, "takes a list or tuple"),
            ({"kwargs": [1]}, TypeError, "takes a dict"),
            ({"args": [object()]}, TypeError, "Argument args[0]"),
            ({"kwargs": {"a": {1, 2}}}, TypeError, "Argument kwargs['a']"),
            ({"tags": "one"}, TypeError, "takes a list of tags"),
            ({"tags": ["ok", ""]}, ValueError, "tag '' is not"),
            ({"tags": [f"t{i}" for i in range(21)]}, ValueError, "at most 20"),
            # One bad field among good ones: none is written.
            ({"priority": 5, "tags": ["x"], "queue_name": "bad name"}, InvalidTask, "invalid"),
        ]
        for changes, error, message in cases:
            with self.subTest(changes=changes), self.assertRaisesMessage(error, message):
                robust_queue.edit_job(result.id, **changes)
        self.assertEqual(_snapshot(result.id), before)

    @override_settings(
        TASKS={
            "default": {
                "BACKEND": "robust_queue.backend.RobustQueueBackend",
                "QUEUES": ["default", "reports"],
                "OPTIONS": {"max_payload_bytes": 100},
            }
        }
    )
    def test_the_backends_queues_and_payload_limit_hold(self) -> None:
        result = tasks.add.enqueue(1, 2)
        before = _snapshot(result.id)
        with self.assertRaisesMessage(InvalidTask, "Queue 'nope' is not valid"):
            robust_queue.edit_job(result.id, queue_name="nope", priority=2)
        with self.assertRaisesMessage(PayloadTooLargeError, "the limit is 100 bytes"):
            robust_queue.edit_job(result.id, args=["x" * 200, 1])
        self.assertEqual(_snapshot(result.id), before)
        robust_queue.edit_job(result.id, queue_name="reports")
        self.assertEqual(_job(result.id).queue_name, "reports")


class ArgumentKeyTests(TestCase):
    """Keys made from the arguments: an edit that keeps them is applied,
    one that changes them is refused (the job's slot, rate window and
    unique claim belong to its key)."""

    def test_a_concurrency_key(self) -> None:
        result = ct.limited.enqueue("acme", "a")
        robust_queue.edit_job(result.id, args=["acme", "renamed"])
        self.assertEqual(_job(result.id).args, ["acme", "renamed"])
        before = _snapshot(result.id)
        with self.assertRaisesMessage(NotEditableError, "its concurrency key is made from"):
            robust_queue.edit_job(result.id, args=["globex", "a"])
        with self.assertRaisesMessage(NotEditableError, "concurrency key"):
            robust_queue.edit_job(result.id, args=[], kwargs={"account": "x", "label": "a"})
        self.assertEqual(_snapshot(result.id), before)
        # Only kwargs given: the stored args count for the key.
        robust_queue.edit_job(result.id, kwargs={"sleep": 0.5})
        self.assertEqual(_job(result.id).kwargs, {"sleep": 0.5})

    def test_a_rate_limit_key(self) -> None:
        result = coordination.rated.enqueue("acme", 1)
        robust_queue.edit_job(result.id, kwargs={"n": 5}, args=["acme"])
        with self.assertRaisesMessage(NotEditableError, "its rate limit key"):
            robust_queue.edit_job(result.id, args=["globex"])
        self.assertEqual(_job(result.id).arguments, {"args": ["acme"], "kwargs": {"n": 5}})

    def test_a_unique_key(self) -> None:
        keyed = unique_tasks.per_account.enqueue("acme", 1)
        robust_queue.edit_job(keyed.id, args=["acme", 2])
        with self.assertRaisesMessage(NotEditableError, "its unique key"):
            robust_queue.edit_job(keyed.id, args=["globex", 2])
        whole = unique_tasks.by_arguments.enqueue(1)
        with self.assertRaisesMessage(NotEditableError, "its unique key"):
            robust_queue.edit_job(whole.id, args=[2])
        robust_queue.edit_job(whole.id, priority=3, tags=["t"])
        self.assertEqual(_job(whole.id).args, [1])

    def test_an_unknown_task_takes_no_new_arguments(self) -> None:
        result = tasks.add.enqueue(1, 2)
        Job.objects.filter(result_id=result.id).update(task_path="gone.module.task")
        with self.assertRaisesMessage(Exception, "its new arguments cannot be checked"):
            robust_queue.edit_job(result.id, args=[1])
        robust_queue.edit_job(result.id, priority=4)
        self.assertEqual(_job(result.id).priority, 4)


class OtherDatabaseTests(TestCase):
    databases = {"default", "queue"}

    def test_backend_picks_the_database_that_holds_the_job(self) -> None:
        result = tasks.add.using(backend="separate").enqueue(1, 1)
        with self.assertRaises(TaskResultDoesNotExist):
            robust_queue.edit_job(result.id, priority=2)
        edited = robust_queue.edit_job(result.id, priority=2, args=[5, 5], backend="separate")
        self.assertEqual(edited.args, [5, 5])
        job = Job.objects.using("queue").get(result_id=result.id)
        self.assertEqual((job.priority, job.args), (2, [5, 5]))
        self.assertEqual(ReadyExecution.objects.using("queue").get(job=job).priority, 2)


class DueNowDispatchTests(TestCase):
    def test_a_job_made_due_is_dispatched_as_the_dispatcher_would(self) -> None:
        """Its limit full and set to discard, it is discarded; the edit
        then finds no job to return."""
        ct.discarding.enqueue("first")
        later = ct.discarding.using(run_after=timezone.now() + timedelta(hours=1)).enqueue("x")
        with self.assertRaisesMessage(TaskResultDoesNotExist, later.id):
            robust_queue.edit_job(later.id, run_after=None)
        self.assertFalse(Job.objects.filter(result_id=later.id).exists())


@override_settings(
    ROBUST_QUEUE={
        "encryption_keys": [ENCRYPTION_KEY],
        "task_modules": [encrypted_tasks.__name__],
    }
)
class EncryptedArgumentsTests(TestCase):
    def test_new_arguments_of_an_encrypted_task_are_sealed(self) -> None:
        result = encrypted_tasks.record_card.enqueue("4111-old", amount=1)
        edited = robust_queue.edit_job(result.id, args=["4111-new"])
        self.assertEqual((edited.args, edited.kwargs), (["4111-new"], {"amount": 1}))
        job = _job(result.id)
        self.assertIs(is_sealed(job.arguments), True)
        self.assertNotIn("4111", json.dumps(job.arguments))
        robust_queue.edit_job(result.id, kwargs={"amount": 7})
        self.assertIs(is_sealed(_job(result.id).arguments), True)
        got = encrypted_tasks.record_card.get_result(result.id)
        self.assertEqual((got.args, got.kwargs), (["4111-new"], {"amount": 7}))

    def test_a_unique_encrypted_task_keeps_its_key(self) -> None:
        result = encrypted_tasks.lookup_secret.enqueue("alpha")
        with self.assertRaisesMessage(NotEditableError, "its unique key"):
            robust_queue.edit_job(result.id, args=["beta"])
        robust_queue.edit_job(result.id, args=["alpha"], priority=2)
        self.assertEqual(_job(result.id).priority, 2)
