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
            import django_tasks  # noqa: F401
        except ImportError:
            self.skipTest("the django-tasks backport is installed only on Django 5.2")
        import django_tasks.signals

        self.addCleanup(importlib.reload, compat)
        with mock.patch.dict(sys.modules, {"django.tasks": None}):
            fresh = importlib.reload(compat)
        self.assertEqual(fresh.FRAMEWORK, "django_tasks")
        self.assertIs(fresh.task_enqueued, django_tasks.signals.task_enqueued)
