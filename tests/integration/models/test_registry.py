"""A job row never decides what code runs (DESIGN §7)."""

from __future__ import annotations

import sys

from django.test import TestCase, override_settings

from robust_queue.compat import FRAMEWORK, InvalidTask, TaskResultStatus, task
from robust_queue.exceptions import UnknownTaskError
from robust_queue.models import Job
from robust_queue.options.registry import resolve_task
from testproject import other_backend, tasks
from tests.helpers import work_off

UNKNOWN = "robust_queue.exceptions.UnknownTaskError"
NOT_DECLARED = "names no task declared with @task for a Robust Queue backend"
WITH_DUMMY = {
    "default": {"BACKEND": "robust_queue.backend.RobustQueueBackend"},
    "separate": {
        "BACKEND": "robust_queue.backend.RobustQueueBackend",
        "OPTIONS": {"database": "queue"},
    },
    "dummy": {"BACKEND": f"{FRAMEWORK}.backends.dummy.DummyBackend"},
}


def forge(task_path: str, backend_alias: str = "default") -> str:
    result = tasks.add.enqueue(1, 1)
    Job.objects.filter(result_id=result.id).update(task_path=task_path, backend_alias=backend_alias)
    return result.id


def only_error(result_id: str) -> dict[str, str]:
    [error] = Job.objects.get(result_id=result_id).errors
    return error


class RegistryTests(TestCase):
    databases = {"default", "queue"}

    def test_forged_paths_fail_with_a_clear_error_and_the_worker_goes_on(self) -> None:
        """Anything that is not a registered task fails its job; the rest run."""
        paths = [
            "os.system",
            "subprocess.run",
            "testproject.tasks.not_a_task",
            "testproject.tasks.missing",
            "testproject.nowhere.task",
            "django.contrib.auth.models.User",
            "not a path",
        ]
        ids = {path: forge(path) for path in paths}
        good = tasks.add.enqueue(2, 2)
        work_off()
        for path in paths:
            with self.subTest(path=path):
                error = only_error(ids[path])
                self.assertEqual(error["exception_class_path"], UNKNOWN)
                self.assertIn(NOT_DECLARED, error["traceback"])
                self.assertIn("ROBUST_QUEUE['task_modules']", error["traceback"])
        self.assertEqual(tasks.add.get_result(good.id).status, TaskResultStatus.SUCCESSFUL)

    def test_a_row_imports_no_module_even_of_an_installed_app(self) -> None:
        """A real task in a module that start-up does not import is not
        imported because a row names it."""
        names = ["testproject.undiscovered_tasks", "django.contrib.sessions.backends.file"]
        for name in names:
            sys.modules.pop(name, None)
        result_ids = [
            forge("testproject.undiscovered_tasks.hidden"),
            forge("django.contrib.sessions.backends.file.SessionStore"),
        ]
        work_off()
        for name, result_id in zip(names, result_ids, strict=True):
            with self.subTest(name=name):
                self.assertNotIn(name, sys.modules)
                self.assertIn(NOT_DECLARED, only_error(result_id)["traceback"])

    def test_a_backend_that_is_not_robust_queue_is_refused(self) -> None:
        with self.assertRaisesMessage(UnknownTaskError, "is not a Robust Queue backend"):
            resolve_task("testproject.tasks.add", "nope")

    def test_task_of_another_robust_queue_alias_is_rebound(self) -> None:
        """.using(backend=...) between Robust Queue aliases keeps working."""
        task_ = resolve_task("testproject.tasks.add", "separate")
        self.assertEqual(task_.backend, "separate")
        self.assertIs(task_.func, tasks.add.func)
        result = tasks.add.using(backend="separate").enqueue(3, 4)
        work_off(using="queue")
        self.assertEqual(result.backend, "separate")
        self.assertEqual(tasks.add.using(backend="separate").get_result(result.id).return_value, 7)


@override_settings(TASKS=WITH_DUMMY)
class OtherBackendTests(TestCase):
    """A task declared for a backend that is not Robust Queue."""

    def setUp(self) -> None:
        self.shout = task(backend="dummy")(other_backend.shout)
        # The module attribute is the other backend's Task, as in a project
        # that declares it there.
        self.addCleanup(setattr, other_backend, "shout", other_backend.shout)
        other_backend.shout = self.shout  # type: ignore[assignment]

    def test_a_forged_row_naming_it_is_refused(self) -> None:
        """The row's Robust Queue alias does not rebind the task."""
        result_id = forge("testproject.other_backend.shout")
        work_off()
        job = Job.objects.get(result_id=result_id)
        self.assertEqual(job.return_value, None)
        self.assertIn(NOT_DECLARED, only_error(result_id)["traceback"])

    def test_enqueueing_a_using_copy_is_refused(self) -> None:
        """.using(backend=<Robust Queue alias>) on it fails at enqueue."""
        with self.assertRaisesMessage(InvalidTask, "was not declared with @task for a Robust"):
            self.shout.using(backend="default").enqueue("hi")
        self.assertFalse(Job.objects.exists())


class OutsideInstalledAppsTests(TestCase):
    """A task whose module is outside the installed apps and task_modules."""

    def test_enqueue_refuses_it_naming_the_fix(self) -> None:
        from tests.tasks_outside_apps import outside

        with self.assertRaisesMessage(
            InvalidTask, "add 'tests.tasks_outside_apps' to ROBUST_QUEUE['task_modules']"
        ):
            outside.enqueue(1)
        self.assertFalse(Job.objects.exists())

    @override_settings(ROBUST_QUEUE={"task_modules": ["tests.tasks_outside_apps"]})
    def test_task_modules_allows_and_imports_it(self) -> None:
        from tests.tasks_outside_apps import outside

        result = outside.enqueue(1)
        work_off()
        self.assertEqual(outside.get_result(result.id).return_value, 2)

    def test_a_forged_row_naming_it_fails(self) -> None:
        """Registered (imported by this test) but outside the allowed modules."""
        from tests.tasks_outside_apps import outside

        result_id = forge(outside.module_path)
        work_off()
        self.assertIn("outside the installed apps", only_error(result_id)["traceback"])
