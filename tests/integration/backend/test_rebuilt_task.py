"""A task rebuilt from a row is the task as enqueued, not as declared."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.test import TestCase, override_settings
from django.utils import timezone

from robust_queue.compat import TaskResultStatus, task_finished, task_started
from robust_queue.exceptions import UnknownTaskError
from robust_queue.models import Job
from robust_queue.options.task import RobustQueueTask
from testproject import control_tasks, tasks
from tests.helpers import work_off

UNKNOWN = "robust_queue.exceptions.UnknownTaskError"
ARGUMENTS = {"picky": ("x",), "limited": ("acct", "a")}


def options(task: Any) -> tuple[str, int, Any, str]:
    return (task.queue_name, task.priority, task.run_after, task.backend)


class RebuiltTaskTests(TestCase):
    databases = {"default", "queue"}

    def test_get_result_has_the_enqueued_queue_priority_run_after_and_backend(self) -> None:
        run_after = timezone.now() + timedelta(hours=1)
        enqueued = tasks.add.using(queue_name="other", priority=7, run_after=run_after)
        result = enqueued.enqueue(1, 2)
        fetched = tasks.add.get_result(result.id)
        self.assertEqual(options(fetched.task), ("other", 7, run_after, "default"))
        self.assertIs(fetched.task.func, tasks.add.func)

    def test_get_result_of_another_robust_queue_alias(self) -> None:
        result = tasks.report.using(backend="separate", priority=-3).enqueue(2)
        fetched = tasks.report.using(backend="separate").get_result(result.id)
        self.assertEqual(options(fetched.task), ("reports", -3, None, "separate"))

    def test_the_worker_runs_the_task_as_enqueued(self) -> None:
        """Signals (and TaskContext, which holds the same result) see the
        job's queue, priority and run_after."""
        seen: list[tuple[str, tuple[str, int, Any, str]]] = []

        def receiver(sender: object, task_result: Any, **kwargs: object) -> None:
            seen.append((task_result.status, options(task_result.task)))

        for signal in (task_started, task_finished):
            signal.connect(receiver)
            self.addCleanup(signal.disconnect, receiver)
        run_after = timezone.now() - timedelta(minutes=1)
        task = tasks.with_context.using(queue_name="other", priority=7, run_after=run_after)
        result = task.enqueue("v")
        work_off()
        expected = ("other", 7, run_after, "default")
        self.assertEqual(
            seen,
            [(TaskResultStatus.RUNNING, expected), (TaskResultStatus.SUCCESSFUL, expected)],
        )
        self.assertEqual(tasks.with_context.get_result(result.id).return_value["value"], "v")


class UnrunnableResultTests(TestCase):
    """get_result of a job whose task path is no longer allowed."""

    def forge(self, **changes: str) -> str:
        result = tasks.add.using(queue_name="other", priority=5).enqueue(1, 1)
        Job.objects.filter(result_id=result.id).update(**changes)
        return result.id

    def test_returns_the_real_state_and_why_it_cannot_run(self) -> None:
        result_id = self.forge(task_path="shop.tasks.removed")
        result = tasks.add.get_backend().get_result(result_id)
        self.assertEqual(result.status, TaskResultStatus.READY)
        self.assertEqual((result.args, result.id), ([1, 1], result_id))
        self.assertEqual(result.task.module_path, "shop.tasks.removed")
        self.assertEqual((result.task.queue_name, result.task.priority), ("other", 5))
        [error] = result.errors
        self.assertEqual(error.exception_class_path, UNKNOWN)
        self.assertIn("'shop.tasks.removed' names no task declared", error.traceback)
        with self.assertRaisesMessage(UnknownTaskError, "names no task declared"):
            result.task.call(1, 1)

    def test_a_declared_task_keeps_its_function(self) -> None:
        """The reason is added after the stored errors; the task still
        matches, so Task.get_result() works."""
        result_id = self.forge(backend_alias="gone")
        work_off()
        result = tasks.add.get_result(result_id)
        self.assertEqual(result.status, TaskResultStatus.FAILED)
        self.assertIs(result.task.func, tasks.add.func)
        self.assertEqual([e.exception_class_path for e in result.errors], [UNKNOWN, UNKNOWN])
        self.assertIn("'gone' of task", result.errors[-1].traceback)

    def test_a_declared_task_keeps_its_class_and_options(self) -> None:
        """A job that cannot run any more (its backend is gone) still shows
        its task as declared: a RobustQueueTask with its retry policy and
        concurrency limit, not a plain Task without them."""
        for declared in (control_tasks.picky, control_tasks.limited):
            with self.subTest(declared.name):
                result = declared.using(priority=4).enqueue(*ARGUMENTS[declared.name])
                Job.objects.filter(result_id=result.id).update(backend_alias="gone")
                task = declared.get_result(result.id).task
                self.assertIs(type(task), type(declared))
                self.assertIsInstance(task, RobustQueueTask)
                self.assertEqual(
                    (task.retry, task.limits_concurrency, task.unique, task.time_limit),
                    (
                        declared.retry,
                        declared.limits_concurrency,
                        declared.unique,
                        declared.time_limit,
                    ),
                )
                self.assertEqual((task.backend, task.priority), ("gone", 4))


class DroppedTaskModuleTests(TestCase):
    """A job enqueued while its module was in ROBUST_QUEUE["task_modules"],
    read after the module was dropped from the setting."""

    OUTSIDE = "tests.tasks_outside_apps"

    def enqueue_while_allowed(self) -> str:
        from tests.tasks_outside_apps import outside

        with override_settings(ROBUST_QUEUE={"task_modules": [self.OUTSIDE]}):
            result = outside.using(priority=4).enqueue(1)
            self.assertEqual(outside.get_result(result.id).status, TaskResultStatus.READY)
        return result.id

    def test_get_result_returns_the_real_state_and_why_it_cannot_run(self) -> None:
        result_id = self.enqueue_while_allowed()
        result = tasks.add.get_backend().get_result(result_id)
        self.assertEqual(result.status, TaskResultStatus.READY)
        self.assertEqual((result.id, result.args), (result_id, [1]))
        self.assertEqual(result.task.module_path, f"{self.OUTSIDE}.outside")
        self.assertEqual(result.task.priority, 4)
        [error] = result.errors
        self.assertEqual(error.exception_class_path, UNKNOWN)
        self.assertIn(
            f"is in module {self.OUTSIDE!r}, outside the installed apps and "
            "ROBUST_QUEUE['task_modules']",
            error.traceback,
        )
        # Still declared (its module was imported): the task keeps its
        # function, so the task's own get_result() finds the job too.
        from tests.tasks_outside_apps import outside

        self.assertIs(result.task.func, outside.func)
        self.assertEqual(outside.get_result(result_id).errors, result.errors)

    def test_a_worker_fails_it_and_get_result_says_why(self) -> None:
        """The worker does not run it either; the failure it records and
        the reason get_result adds both name the setting."""
        result_id = self.enqueue_while_allowed()
        work_off()
        job = Job.objects.get(result_id=result_id)
        self.assertIsNone(job.return_value)
        result = tasks.add.get_backend().get_result(result_id)
        self.assertEqual(result.status, TaskResultStatus.FAILED)
        self.assertEqual([e.exception_class_path for e in result.errors], [UNKNOWN, UNKNOWN])
        for error in result.errors:
            self.assertIn("ROBUST_QUEUE['task_modules']", error.traceback)
