"""A task whose module workers never import is caught at enqueue (issue 28 §7).

``ROBUST_QUEUE["task_modules"] = ["tests"]`` allows every module under
``tests``, but a worker imports only ``tests`` itself (and what it
imports): a task declared in ``tests/tasks_outside_apps.py`` enqueues, and
its job fails in the worker with ``UnknownTaskError``. The first enqueue
logs a warning naming the module and the setting; listing the module
itself, or importing it from a task module, silences it.
"""

from __future__ import annotations

from django.test import TestCase, override_settings

from robust_queue.models import Job
from robust_queue.options import registry_imports

OUTSIDE = "tests.tasks_outside_apps"
LOGGER = "robust_queue.options.registry_imports"


class UnimportedTaskModuleTests(TestCase):
    def setUp(self) -> None:
        registry_imports._JUDGED.discard(OUTSIDE)
        self.addCleanup(registry_imports._JUDGED.discard, OUTSIDE)

    @override_settings(ROBUST_QUEUE={"task_modules": ["tests"]})
    def test_enqueue_warns_once_naming_the_module_and_the_setting(self) -> None:
        from tests.tasks_outside_apps import outside

        with self.assertLogs(LOGGER, "WARNING") as logs:
            outside.enqueue(1)
            outside.enqueue(2)
        [message] = logs.output
        self.assertIn(f"Task module {OUTSIDE!r} is not imported by workers at start-up", message)
        self.assertIn(f"Add {OUTSIDE!r} to ROBUST_QUEUE['task_modules']", message)
        self.assertEqual(Job.objects.count(), 2)  # a warning: the jobs are written

    @override_settings(ROBUST_QUEUE={"task_modules": [OUTSIDE]})
    def test_a_listed_module_is_not_warned_about(self) -> None:
        from tests.tasks_outside_apps import outside

        with self.assertNoLogs(LOGGER, "WARNING"):
            outside.enqueue(1)

    def test_a_task_module_is_reached_without_reading_any_source(self) -> None:
        self.assertIs(registry_imports.reaches("testproject.tasks"), True)

    @override_settings(ROBUST_QUEUE={"task_modules": ["tests.task_reach"]})
    def test_what_the_start_modules_import_is_reached(self) -> None:
        """Followed through import statements, at a module's top or inside
        a function, and through the packages above a module."""
        for module, reached in [
            ("tests.task_reach.tasks", True),
            ("tests.task_reach", True),
            ("tests.task_reach.helpers", True),
            ("tests.task_reach.deferred", True),
            ("tests.task_reach.unimported", False),
            ("testproject.undiscovered_tasks", False),
        ]:
            with self.subTest(module):
                self.assertIs(registry_imports.reaches(module), reached)

    def test_reading_the_imports_imports_nothing(self) -> None:
        import sys

        sys.modules.pop("testproject.undiscovered_tasks", None)
        registry_imports._imported_from.cache_clear()
        registry_imports._source.cache_clear()
        self.assertIs(registry_imports.reaches("testproject.undiscovered_tasks"), False)
        self.assertNotIn("testproject.undiscovered_tasks", sys.modules)
