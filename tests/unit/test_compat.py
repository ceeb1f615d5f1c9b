"""compat imports the framework in use, preferring django.tasks."""

from __future__ import annotations

import importlib
import sys
from unittest import mock

from django.test import SimpleTestCase

from robust_queue import compat


class CompatTests(SimpleTestCase):
    def test_prefers_django_tasks_when_django_ships_it(self) -> None:
        try:
            import django.tasks  # noqa: F401
        except ImportError:
            self.assertEqual(compat.FRAMEWORK, "django_tasks")
        else:
            self.assertEqual(compat.FRAMEWORK, "django.tasks")

    def test_signals_are_those_of_the_framework_in_use(self) -> None:
        signals = importlib.import_module(f"{compat.FRAMEWORK}.signals")
        self.assertIs(compat.task_enqueued, signals.task_enqueued)
        self.assertIs(compat.task_started, signals.task_started)
        self.assertIs(compat.task_finished, signals.task_finished)

    def test_falls_back_to_the_backport_when_django_tasks_is_missing(self) -> None:
        try:
            import django_tasks
        except ImportError:
            self.skipTest("the django-tasks backport is installed only on Django 5.2")
        import django_tasks.signals

        self.addCleanup(importlib.reload, compat)
        with mock.patch.dict(sys.modules, {"django.tasks": None}):
            fresh = importlib.reload(compat)
        self.assertEqual(fresh.FRAMEWORK, "django_tasks")
        self.assertIs(fresh.task_enqueued, django_tasks.signals.task_enqueued)

    def test_a_missing_backport_names_the_fix(self) -> None:
        """Django 5.2 without django-tasks: an error that says what to install."""
        from robust_queue.exceptions import TasksFrameworkMissingError

        self.addCleanup(importlib.reload, compat)
        hidden = {"django.tasks": None, "django_tasks": None}
        with mock.patch.dict(sys.modules, hidden), self.assertRaises(ImportError) as caught:
            importlib.reload(compat)
        self.assertIsInstance(caught.exception, TasksFrameworkMissingError)
        message = str(caught.exception)
        self.assertIn('pip install "robust-queue[backport]"', message)
        self.assertIn("Django >= 6.0", message)

    def test_only_django_6_0_refuses_extra_task_keywords(self) -> None:
        """@task(limits_concurrency=...) works on the backport and Django >= 6.1."""
        import django

        on_6_0 = compat.FRAMEWORK == "django.tasks" and django.VERSION[:2] == (6, 0)
        self.assertIs(compat.TASK_TAKES_OPTIONS, not on_6_0)
