"""``@retain`` and ``ROBUST_QUEUE["task_retention"]``: values and errors."""

from __future__ import annotations

from datetime import timedelta

from django.test import SimpleTestCase, override_settings

import robust_queue
from robust_queue.checks import check_settings
from robust_queue.compat import TASK_TAKES_OPTIONS, task
from robust_queue.exceptions import ConfigurationError
from robust_queue.options import task_retention
from robust_queue.options.task_retention import GLOBAL, TaskRetention
from testproject import coordination_tasks as co


def _sample() -> None:
    """A function of this module to declare tasks from."""


class RetainTests(SimpleTestCase):
    def test_the_decorator_sets_the_options_it_is_given(self) -> None:
        self.assertEqual(co.kept_a_month.retain, TaskRetention(finished=timedelta(days=30)))  # type: ignore[attr-defined]
        self.assertEqual(co.kept_an_hour.retain.failed, None)  # type: ignore[attr-defined]
        self.assertEqual(co.kept_a_month.retain.failed, GLOBAL)  # type: ignore[attr-defined]
        seconds = robust_queue.retain(finished=90)(task()(_sample)).retain  # type: ignore[attr-defined]
        self.assertEqual(seconds.finished, timedelta(seconds=90))

    def test_bad_options_are_refused(self) -> None:
        for options, message in (
            ({}, "retain(): needs 'finished' and/or 'failed'."),
            ({"finished": 0}, "'finished' must be a positive timedelta or number of seconds"),
            ({"failed": timedelta(seconds=-5)}, "'failed' must be a positive"),
            ({"finished": "1d"}, "not '1d'"),
            ({"finished": float("inf")}, "not inf"),
            ({"finished": True}, "not True"),
        ):
            with (
                self.subTest(options=options),
                self.assertRaisesMessage(ConfigurationError, message),
            ):
                robust_queue.retain(**options)

    def test_the_task_keyword_is_the_decorator(self) -> None:
        if not TASK_TAKES_OPTIONS:
            self.skipTest("Django 6.0's @task takes no backend options")
        declared = task(retain={"failed": timedelta(days=2)})(_sample)
        self.assertEqual(declared.retain, TaskRetention(failed=timedelta(days=2)))
        with self.assertRaisesMessage(ConfigurationError, "@task(retain=...) takes a dict"):
            task(retain={"finshed": 1})(_sample)


class RetentionSettingTests(SimpleTestCase):
    @override_settings(
        ROBUST_QUEUE={
            "task_retention": {
                "app.tasks.a": {"finished": 60, "failed": None},
                "app.tasks.b": {"failed": timedelta(days=2)},
            }
        }
    )
    def test_entries_are_read(self) -> None:
        self.assertEqual(task_retention.validate_settings(), [])
        self.assertEqual(
            task_retention.from_settings(),
            {
                "app.tasks.a": TaskRetention(finished=timedelta(seconds=60), failed=None),
                "app.tasks.b": TaskRetention(failed=timedelta(days=2)),
            },
        )

    @override_settings(
        ROBUST_QUEUE={
            "task_retention": {
                "app.tasks.a": {"finished": -1},
                "app.tasks.b": {"kept": 5},
                "app.tasks.c": {},
                "": {"finished": 5},
                "app.tasks.d": "forever",
            }
        }
    )
    def test_each_problem_is_named_and_reported_by_the_checks(self) -> None:
        problems = task_retention.validate_settings()
        for expected in (
            "['app.tasks.a']: 'finished' must be a positive",
            "['app.tasks.b'] has unknown option(s) kept",
            "['app.tasks.c'] must be a dict with 'finished' and/or 'failed'",
            "has key '': a key is a task's dotted path",
            "['app.tasks.d'] must be a dict",
        ):
            self.assertTrue(any(expected in p for p in problems), (expected, problems))
        self.assertEqual(task_retention.from_settings(), {}, "a bad setting clears nothing")
        messages = [m.msg for m in check_settings() if m.id == "robust_queue.E023"]
        self.assertTrue(any("task_retention" in m for m in messages), messages)

    @override_settings(ROBUST_QUEUE={"task_retention": ["app.tasks.a"]})
    def test_a_setting_that_is_not_a_dict_is_refused(self) -> None:
        self.assertEqual(
            task_retention.validate_settings(),
            [
                "ROBUST_QUEUE[\"task_retention\"] must be a dict of task path -> options, not ['app.tasks.a']"
            ],
        )
