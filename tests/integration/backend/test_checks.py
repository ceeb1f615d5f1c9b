"""Misconfiguration surfaces as Django system checks."""

from __future__ import annotations

from django.core import checks
from django.test import SimpleTestCase, override_settings

from robust_queue.compat import task_backends
from robust_queue.options.backend_options import check_sqlite_transactions


def _messages() -> dict[str, str]:
    return {
        message.id: message.msg for backend in task_backends.all() for message in backend.check()
    }


class BackendCheckTests(SimpleTestCase):
    # Django 6.1's run_checks() includes database checks.
    databases = {"default", "queue"}

    def test_the_test_project_is_clean(self) -> None:
        self.assertEqual(_messages(), {})
        self.assertEqual([m for m in checks.run_checks() if m.id.startswith("robust_queue")], [])

    @override_settings(
        TASKS={
            "default": {
                "BACKEND": "robust_queue.backend.RobustQueueBackend",
                "OPTIONS": {"database": "missing", "max_payload_bytes": -1, "colour": 1},
            }
        }
    )
    def test_bad_options_are_reported(self) -> None:
        messages = _messages()
        self.assertIn("'missing', which is not in DATABASES", messages["robust_queue.E002"])
        self.assertIn("unknown option 'colour'", messages["robust_queue.E003"])
        self.assertIn("positive integer, not -1", messages["robust_queue.E004"])

    @override_settings(
        TASKS={
            "default": {
                "BACKEND": "robust_queue.backend.RobustQueueBackend",
                "OPTIONS": {"max_return_value_bytes": 1000},
            }
        }
    )
    def test_max_return_value_bytes_is_a_known_option(self) -> None:
        self.assertEqual(_messages(), {})

    @override_settings(
        TASKS={
            "default": {
                "BACKEND": "robust_queue.backend.RobustQueueBackend",
                "OPTIONS": {"max_return_value_bytes": "big"},
            }
        }
    )
    def test_a_bad_max_return_value_bytes_is_reported(self) -> None:
        self.assertIn(
            "['max_return_value_bytes'] must be a positive integer, not 'big'",
            _messages()["robust_queue.E004"],
        )

    @override_settings(INSTALLED_APPS=["django.contrib.contenttypes"])
    def test_app_not_installed_is_reported(self) -> None:
        self.assertIn("not in INSTALLED_APPS", _messages()["robust_queue.E001"])

    def test_sqlite_without_immediate_transactions_is_reported(self) -> None:
        sqlite = {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}
        [warning] = check_sqlite_transactions("TASKS['default']", "lite", sqlite)
        self.assertEqual(warning.id, "robust_queue.W001")
        self.assertIn("'lite', whose transaction_mode is None", warning.msg)
        immediate = {**sqlite, "OPTIONS": {"transaction_mode": "IMMEDIATE"}}
        self.assertEqual(list(check_sqlite_transactions("x", "lite", immediate)), [])
        postgres = {"ENGINE": "django.db.backends.postgresql", "NAME": "q"}
        self.assertEqual(list(check_sqlite_transactions("x", "q", postgres)), [])
