"""A job row never decides what code runs (DESIGN §7)."""

from __future__ import annotations

import sys

from django.test import TestCase, override_settings

from robust_queue.compat import TaskResultStatus
from robust_queue.exceptions import UnknownTaskError
from robust_queue.models import Job
from robust_queue.registry import resolve_task
from testproject import tasks
from tests.helpers import work_off


class RegistryTests(TestCase):
    def forge(self, task_path: str, backend_alias: str = "default") -> str:
        result = tasks.add.enqueue(1, 1)
        Job.objects.filter(result_id=result.id).update(
            task_path=task_path, backend_alias=backend_alias
        )
        return result.id

    def test_forged_paths_fail_with_a_clear_error_and_the_worker_goes_on(self) -> None:
        cases = {
            "os.system": "outside the installed apps",
            "subprocess.run": "outside the installed apps",
            "testproject.tasks.not_a_task": "does not name a Task",
            "testproject.tasks.missing": "does not name a Task",
            "testproject.nowhere.task": "cannot be imported",
            "not a path": "is not a dotted path",
        }
        ids = {path: self.forge(path) for path in cases}
        good = tasks.add.enqueue(2, 2)
        work_off()
        for path, message in cases.items():
            with self.subTest(path=path):
                job = Job.objects.get(result_id=ids[path])
                [error] = job.errors
                self.assertEqual(
                    error["exception_class_path"],
                    "robust_queue.exceptions.UnknownTaskError",
                )
                self.assertIn(message, error["traceback"])
        self.assertEqual(tasks.add.get_result(good.id).status, TaskResultStatus.SUCCESSFUL)

    def test_disallowed_module_is_never_imported(self) -> None:
        name = "xml.dom.pulldom"
        sys.modules.pop(name, None)
        with self.assertRaisesMessage(UnknownTaskError, "refusing to import"):
            resolve_task(f"{name}.parse", "default")
        self.assertNotIn(name, sys.modules)

    def test_a_backend_that_is_not_robust_queue_is_refused(self) -> None:
        with self.assertRaisesMessage(UnknownTaskError, "is not a Robust Queue backend"):
            resolve_task("testproject.tasks.add", "nope")

    @override_settings(ROBUST_QUEUE={"task_modules": ["json"]})
    def test_task_modules_setting_allows_more_modules(self) -> None:
        with self.assertRaisesMessage(UnknownTaskError, "does not name a Task"):
            resolve_task("json.dumps", "default")

    def test_task_of_another_robust_queue_alias_is_rebound(self) -> None:
        task = resolve_task("testproject.tasks.add", "separate")
        self.assertEqual(task.backend, "separate")
        self.assertIs(task.func, tasks.add.func)
