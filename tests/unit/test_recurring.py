"""Recurring definitions: cron parsing, time zones, validation (no DB)."""

from __future__ import annotations

from datetime import UTC, datetime

from django.test import SimpleTestCase, override_settings

from robust_queue import recurring
from robust_queue.exceptions import ConfigurationError
from robust_queue.options import recurrence as recurring_module
from robust_queue.options.recurrence import (
    _DECLARED,
    from_settings,
    next_time,
    previous_time,
    schedule_error,
    validate_recurring,
)
from testproject import control_tasks as ct
from testproject import tasks


class CronTests(SimpleTestCase):
    def test_slots_are_read_in_the_project_time_zone(self) -> None:
        after = datetime(2024, 3, 30, 12, 0, tzinfo=UTC)  # 13:00 in Paris
        with override_settings(TIME_ZONE="Europe/Paris"):
            # Across the DST change: noon in Paris is 10:00 UTC next day.
            slot = next_time("0 12 * * *", after)
        self.assertEqual(slot, datetime(2024, 3, 31, 10, 0, tzinfo=UTC))
        self.assertEqual(next_time("0 12 * * *", after), datetime(2024, 3, 31, 12, 0, tzinfo=UTC))

    def test_next_and_previous_are_strict(self) -> None:
        at = datetime(2024, 1, 1, 3, 0, tzinfo=UTC)
        self.assertEqual(next_time("*/5 * * * *", at), datetime(2024, 1, 1, 3, 5, tzinfo=UTC))
        self.assertEqual(previous_time("*/5 * * * *", at), datetime(2024, 1, 1, 2, 55, tzinfo=UTC))

    def test_bad_schedules_are_explained(self) -> None:
        self.assertIsNone(schedule_error("@hourly"))
        self.assertIn("does not parse", schedule_error("61 * * * *") or "")
        self.assertIn("does not parse", schedule_error("every day") or "")
        self.assertIn("must be a cron string", schedule_error("") or "")
        self.assertIn("must be a cron string", schedule_error(None) or "")


class DecoratorTests(SimpleTestCase):
    def declare(self, *args: object, **kwargs: object) -> None:
        key = kwargs.get("key")
        self.addCleanup(_DECLARED.pop, key, None)
        recurring(*args, **kwargs)(tasks.add)  # type: ignore[arg-type]

    def test_the_package_exports_the_decorator_even_after_the_module_loads(self) -> None:
        import robust_queue

        self.assertIs(robust_queue.recurring, recurring_module.recurring)
        self.addCleanup(_DECLARED.pop, "unit-same", None)
        robust_queue.recurring("@daily", key="unit-same", args=(1, 2))(tasks.add)
        self.assertEqual(_DECLARED["unit-same"].arguments, {"args": [1, 2], "kwargs": {}})

    def test_one_task_may_recur_under_several_keys(self) -> None:
        keys = {d.key for d in recurring_module.declared() if d.task_path.endswith(".tick")}
        self.assertEqual(keys, {"tick-new-year", "tick-july"})
        self.assertEqual(_DECLARED["tick-july"].priority, 5)

    def test_a_duplicate_key_is_an_error(self) -> None:
        self.declare("@daily", key="unit-dup", args=(1, 2))
        self.declare("@daily", key="unit-dup", args=(1, 2))  # a re-import
        with self.assertRaisesMessage(ConfigurationError, "'unit-dup' is declared twice"):
            self.declare("@hourly", key="unit-dup", args=(1, 2))

    def test_bad_input_fails_at_decoration(self) -> None:
        cases = [
            ({"schedule": "nope"}, "does not parse"),
            ({"schedule": "@daily", "args": (object(),)}, "its arguments cannot be stored"),
            ({"schedule": "@daily", "priority": 101}, "priority must be an integer"),
            ({"schedule": "@daily", "queue_name": "no such queue!"}, "is invalid"),
            ({"schedule": "@daily", "queue_name": "q" * 65}, "longer than 64 characters"),
        ]
        for kwargs, message in cases:
            schedule = kwargs.pop("schedule")
            with self.subTest(message), self.assertRaisesMessage(ConfigurationError, message):
                self.declare(schedule, key="unit-bad", **kwargs)
        with self.assertRaisesMessage(ConfigurationError, "stacked over @task"):
            recurring("@daily")(print)  # type: ignore[arg-type]


class SettingsTests(SimpleTestCase):
    def test_declared_in_settings(self) -> None:
        entries = {
            "nightly": {
                "task": "testproject.tasks.report",
                "schedule": "0 2 * * *",
                "args": [5],
                "queue_name": "night",
                "priority": -3,
            }
        }
        with override_settings(ROBUST_QUEUE={"recurring_tasks": entries}):
            (definition,), errors = from_settings()
            self.assertEqual(validate_recurring(), [])
        self.assertEqual(errors, [])
        self.assertEqual(definition.task_path, "testproject.tasks.report")
        self.assertEqual((definition.queue_name, definition.priority), ("night", -3))
        self.assertEqual(definition.arguments["args"], [5])

    def test_validation_reports_every_problem(self) -> None:
        entries = {
            "bad-cron": {"task": "testproject.tasks.add", "schedule": "* * *"},
            "no-task": {"task": "os.system", "schedule": "@daily"},
            "not-a-task": {"task": "testproject.tasks.not_a_task", "schedule": "@daily"},
            "bad-args": {"task": "testproject.tasks.add", "schedule": "@daily", "args": [{1, 2}]},
            "typo": {"task": "testproject.tasks.add", "schedule": "@daily", "queue": "x"},
            "tick-july": {"task": "testproject.control_tasks.tick", "schedule": "@daily"},
            "bad-queue": {
                "task": "testproject.tasks.add",
                "schedule": "@daily",
                "queue_name": "bad queue!",
            },
        }
        with override_settings(ROBUST_QUEUE={"recurring_tasks": entries}):
            errors = validate_recurring()
            with self.assertRaises(ConfigurationError):
                recurring_module.definitions()
        text = "\n".join(errors)
        self.assertEqual(len(errors), 7, text)
        for needle in (
            "'* * *' does not parse",
            "'os.system' names no task declared",
            "'testproject.tasks.not_a_task' names no task declared",
            "arguments cannot be stored",
            "unknown fields: queue",
            "'tick-july' is declared both",
            "Recurring task 'bad-queue': Queue name 'bad queue!' is invalid",
        ):
            self.assertIn(needle, text)
        # The clash is with the @recurring declaration on control_tasks.tick.
        declared = {d.key: d.task_path for d in recurring_module.declared()}
        self.assertEqual(declared["tick-july"], ct.tick.module_path)
