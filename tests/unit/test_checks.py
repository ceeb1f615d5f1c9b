"""System checks over ROBUST_QUEUE and the modules that hold tasks."""

from __future__ import annotations

from django.core import checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import SimpleTestCase, override_settings

from robust_queue.checks import check_settings

TASKS_ONLY_DEFAULT_QUEUE = {
    "default": {
        "BACKEND": "robust_queue.backend.RobustQueueBackend",
        "QUEUES": ["default"],
    }
}
BAD_QUEUE_MODULE = "tests.unit.tasks_with_unlisted_queue"


def ids(messages: list[checks.CheckMessage]) -> list[str]:
    return [message.id or "" for message in messages]


class SettingsCheckTests(SimpleTestCase):
    # Django 6.1's ``manage.py check`` includes database checks.
    databases = {"default", "queue"}

    def test_the_test_project_passes(self) -> None:
        self.assertEqual(check_settings(), [])

    @override_settings(ROBUST_QUEUE={"worker": [{"threads": 5}]})
    def test_a_misspelt_key_is_an_error_naming_the_right_one(self) -> None:
        [message] = check_settings()
        self.assertEqual(message.id, "robust_queue.E020")
        self.assertIn("unknown key 'worker'", message.msg)
        self.assertIn("Did you mean 'workers'?", message.hint or "")

    @override_settings(ROBUST_QUEUE={"worker": []})
    def test_manage_py_check_reports_unknown_keys(self) -> None:
        with self.assertRaisesMessage(SystemCheckError, "unknown key 'worker'"):
            call_command("check")

    @override_settings(ROBUST_QUEUE={"workers": [{"threads": 0}], "mode": "spawn"})
    def test_bad_values_are_errors(self) -> None:
        messages = check_settings()
        self.assertEqual(ids(messages), ["robust_queue.E023", "robust_queue.E023"])
        self.assertIn("WorkerConfig.threads must be > 0, not 0", messages[0].msg + messages[1].msg)

    @override_settings(ROBUST_QUEUE={"workers": [{"colour": "red"}]})
    def test_malformed_settings_are_an_error_not_a_crash(self) -> None:
        [message] = check_settings()
        self.assertIn("Invalid ROBUST_QUEUE settings", message.msg)

    @override_settings(
        TASKS=TASKS_ONLY_DEFAULT_QUEUE, ROBUST_QUEUE={"task_modules": [BAD_QUEUE_MODULE]}
    )
    def test_a_task_queue_missing_from_tasks_queues_is_an_error_not_a_crash(self) -> None:
        messages = [m for m in check_settings() if BAD_QUEUE_MODULE in m.msg]
        self.assertEqual(ids(messages), ["robust_queue.E021"])
        self.assertIn("tasks_with_unlisted_queue.py, line", messages[0].msg)
        self.assertIn("Queue 'reports' is not valid", messages[0].msg)
        self.assertIn("TASKS['default']['QUEUES'] is ['default']", messages[0].hint or "")
        self.assertIn("Add the queue to that list", messages[0].hint or "")
