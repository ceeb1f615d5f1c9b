"""Every fact of DESIGN §3, the django.tasks backend contract."""

from __future__ import annotations

import sys
from datetime import timedelta

from django.db import transaction
from django.test import SimpleTestCase, TestCase
from django.utils import timezone

from robust_queue.backend import RobustQueueBackend
from robust_queue.compat import (
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_enqueued,
    task_finished,
    task_started,
)
from robust_queue.models import BlockedExecution, Job, JobState
from robust_queue.running.performing import perform
from testproject import tasks
from tests.helpers import WORKER_ID, claim, work_off


class ImportTimeTests(SimpleTestCase):
    """SimpleTestCase refuses database queries, so these prove none happen."""

    def test_backend_init_and_validate_task_do_not_touch_the_orm(self) -> None:
        """Instantiating the backend and deriving tasks never queries."""
        backend = RobustQueueBackend(alias="x", params={"QUEUES": [], "OPTIONS": {}})
        backend.validate_task(tasks.add)
        derived = tasks.add.using(priority=5, queue_name="other")
        self.assertEqual(derived.priority, 5)

    def test_support_flags_are_all_true(self) -> None:
        for flag in (
            "supports_defer",
            "supports_priority",
            "supports_get_result",
            "supports_async_task",
        ):
            with self.subTest(flag=flag):
                self.assertIs(getattr(RobustQueueBackend, flag), True)


class SignalRecorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, type, object, bool, bool]] = []

    def connect(self, test: TestCase) -> None:
        for name, signal in (
            ("enqueued", task_enqueued),
            ("started", task_started),
            ("finished", task_finished),
        ):
            receiver = self._receiver(name)
            signal.connect(receiver, weak=False)
            test.addCleanup(signal.disconnect, receiver)

    def _receiver(self, name: str):  # type: ignore[no-untyped-def]
        def receive(sender: type, task_result: object, **kwargs: object) -> None:
            in_except = sys.exc_info()[0] is not None
            stored = Job.objects.filter(result_id=task_result.id).exists()
            self.calls.append((name, sender, task_result, in_except, stored))

        return receive


class ContractTests(TestCase):
    def test_enqueue_writes_then_returns_ready_then_signals(self) -> None:
        """task_enqueued is sent after the row exists, with a READY result."""
        recorder = SignalRecorder()
        recorder.connect(self)
        result = tasks.add.enqueue(1, 2)
        self.assertEqual(result.status, TaskResultStatus.READY)
        [(name, sender, signalled, _, stored)] = recorder.calls
        self.assertEqual(name, "enqueued")
        self.assertIs(sender, RobustQueueBackend)
        self.assertEqual(signalled.id, result.id)
        self.assertIs(stored, True)

    def test_unserialisable_arguments_raise_type_error_before_writing(self) -> None:
        recorder = SignalRecorder()
        recorder.connect(self)
        with self.assertRaisesMessage(TypeError, "args[1]"):
            tasks.echo.enqueue(1, {1, 2})
        self.assertEqual(Job.objects.count(), 0)
        self.assertEqual(recorder.calls, [])

    def test_priority_higher_runs_first_then_job_order(self) -> None:
        low = tasks.add.using(priority=-5).enqueue(1, 1)
        first_high = tasks.add.using(priority=50).enqueue(1, 1)
        second_high = tasks.add.using(priority=50).enqueue(1, 1)
        default = tasks.add.enqueue(1, 1)
        order = [row.job.result_id for row in claim(10)]
        self.assertEqual(order, [first_high.id, second_high.id, default.id, low.id])

    def test_started_and_finished_signals_use_the_backend_class(self) -> None:
        recorder = SignalRecorder()
        tasks.add.enqueue(2, 3)
        recorder.connect(self)
        work_off()
        names = [(name, sender) for name, sender, *_ in recorder.calls]
        self.assertEqual(names, [("started", RobustQueueBackend), ("finished", RobustQueueBackend)])
        finished = recorder.calls[1][2]
        self.assertEqual(finished.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(finished.return_value, 5)

    def test_failure_finished_signal_is_sent_inside_except(self) -> None:
        recorder = SignalRecorder()
        tasks.fail.enqueue("bad")
        recorder.connect(self)
        work_off()
        name, _, result, in_except, _ = recorder.calls[-1]
        self.assertEqual(name, "finished")
        self.assertEqual(result.status, TaskResultStatus.FAILED)
        self.assertIs(in_except, True)
        self.assertEqual(result.errors[0].exception_class_path, "builtins.ValueError")

    def test_result_id_is_opaque_unique_and_at_most_64_chars(self) -> None:
        ids = {tasks.add.enqueue(1, 1).id for _ in range(50)}
        self.assertEqual(len(ids), 50)
        for result_id in ids:
            self.assertIsInstance(result_id, str)
            self.assertLessEqual(len(result_id), 64)
            # 32 random bytes: not a counter, not guessable.
            self.assertGreaterEqual(len(result_id), 40)
            self.assertFalse(result_id.isdigit())
        self.assertNotIn(str(Job.objects.first().pk), ids)

    def test_attempts_equal_worker_ids_appended_at_claim(self) -> None:
        result = tasks.add.enqueue(1, 1)
        [claimed] = claim()
        running = tasks.add.get_result(result.id)
        self.assertEqual(running.status, TaskResultStatus.RUNNING)
        self.assertEqual(running.worker_ids, [WORKER_ID])
        self.assertEqual(running.attempts, 1)
        perform(claimed)
        self.assertEqual(tasks.add.get_result(result.id).attempts, 1)

    def test_context_attempt_is_one_on_first_run(self) -> None:
        result = tasks.with_context.enqueue("v")
        work_off()
        value = tasks.with_context.get_result(result.id).return_value
        self.assertEqual(value, {"attempt": 1, "result_id": result.id, "value": "v"})

    def test_get_result_rebuilds_the_same_task_function(self) -> None:
        result = tasks.add.enqueue(4, 5)
        fetched = tasks.add.get_result(result.id)
        self.assertIs(fetched.task.func, tasks.add.func)
        self.assertEqual(fetched.args, [4, 5])

    def test_unknown_or_malformed_ids_raise_does_not_exist(self) -> None:
        backend = tasks.add.get_backend()
        for bad in ("", "nope", "x" * 65, "' OR 1=1 --", "\x00", 42, None):
            with self.subTest(bad=bad), self.assertRaises(TaskResultDoesNotExist):
                backend.get_result(bad)

    def test_errors_record_class_path_and_traceback_per_attempt(self) -> None:
        result = tasks.fail.enqueue("first")
        work_off()
        fetched = tasks.fail.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.FAILED)
        [error] = fetched.errors
        self.assertEqual(error.exception_class_path, "builtins.ValueError")
        self.assertIs(error.exception_class, ValueError)
        self.assertIn("Traceback (most recent call last)", error.traceback)
        self.assertIn("ValueError: first", error.traceback)
        self.assertIsNotNone(fetched.finished_at)
        with self.assertRaisesMessage(ValueError, "Task failed"):
            fetched.return_value  # noqa: B018

    def test_unserialisable_return_value_ends_failed(self) -> None:
        result = tasks.returns_set.enqueue()
        work_off()
        fetched = tasks.returns_set.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.FAILED)
        self.assertEqual(
            fetched.errors[0].exception_class_path,
            "robust_queue.exceptions.ReturnValueError",
        )

    def test_enqueue_joins_the_callers_transaction(self) -> None:
        """A rollback means the task never existed."""

        class Rollback(Exception):
            pass

        try:
            with transaction.atomic():
                result = tasks.add.enqueue(1, 1)
                raise Rollback
        except Rollback:
            pass
        with self.assertRaises(TaskResultDoesNotExist):
            tasks.add.get_result(result.id)
        self.assertEqual(Job.objects.count(), 0)

    def test_status_mapping_of_every_state(self) -> None:
        ready = tasks.add.enqueue(1, 1)
        scheduled = tasks.add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(1, 1)
        blocked = tasks.add.enqueue(1, 1)
        job = Job.objects.get(result_id=blocked.id)
        job.ready_execution.delete()
        BlockedExecution.objects.create(
            job=job,
            queue_name=job.queue_name,
            priority=0,
            concurrency_key="k",
            expires_at=timezone.now(),
        )
        failed = tasks.fail.enqueue()
        finished = tasks.add.enqueue(2, 2)
        running = tasks.sleep_for.using(priority=-100).enqueue(0)
        for row in claim(10):
            if row.job.result_id != running.id and row.job.result_id != ready.id:
                perform(row)
            elif row.job.result_id == ready.id:
                row.release()
        expected = {
            ready.id: (TaskResultStatus.READY, JobState.READY),
            scheduled.id: (TaskResultStatus.READY, JobState.SCHEDULED),
            blocked.id: (TaskResultStatus.READY, JobState.BLOCKED),
            running.id: (TaskResultStatus.RUNNING, JobState.CLAIMED),
            finished.id: (TaskResultStatus.SUCCESSFUL, JobState.FINISHED),
            failed.id: (TaskResultStatus.FAILED, JobState.FAILED),
        }
        backend = tasks.add.get_backend()
        for result_id, (status, state) in expected.items():
            with self.subTest(state=state):
                self.assertEqual(backend.get_result(result_id).status, status)
                job = Job.objects.with_executions().get(result_id=result_id)
                self.assertEqual(job.state, state)
