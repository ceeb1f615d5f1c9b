"""``manage.py check --deploy`` warns while ``argument_models`` is unset."""

from __future__ import annotations

from io import StringIO

from django.core import checks
from django.core.management import call_command
from django.test import SimpleTestCase, override_settings

from robust_queue import conf


def deploy_ids() -> list[str]:
    messages = checks.run_checks(include_deployment_checks=True, tags=["robust_queue"])
    return [message.id or "" for message in messages]


class ArgumentModelsDeployCheckTests(SimpleTestCase):
    databases = {"default", "queue"}

    def test_check_deploy_warns_while_it_is_unset(self) -> None:
        """Any installed model may be loaded from a stored reference: W002
        says so, names the setting and what it guards."""
        [message] = [
            m
            for m in checks.run_checks(include_deployment_checks=True, tags=["robust_queue"])
            if m.id == "robust_queue.W002"
        ]
        self.assertIs(message.level, checks.WARNING)
        self.assertIn("ROBUST_QUEUE['argument_models'] is not set", message.msg)
        self.assertIn("any installed model", message.msg)
        self.assertIn("['shop.order']", message.hint or "")
        err = StringIO()
        # Errors of other apps (async.E001 while a browser test's
        # DJANGO_ALLOW_ASYNC_UNSAFE is set) must not stop the report.
        call_command("check", "--deploy", "--fail-level", "CRITICAL", stdout=StringIO(), stderr=err)
        self.assertIn("(robust_queue.W002)", err.getvalue())

    def test_plain_check_does_not_warn(self) -> None:
        """Development keeps the default quietly: only --deploy warns."""
        messages = checks.run_checks(tags=["robust_queue"])
        self.assertNotIn("robust_queue.W002", [m.id for m in messages])

    @override_settings(ROBUST_QUEUE={"argument_models": ["auth.group"]})
    def test_a_list_silences_it(self) -> None:
        self.assertNotIn("robust_queue.W002", deploy_ids())

    @override_settings(ROBUST_QUEUE={"argument_models": []})
    def test_an_empty_list_silences_it(self) -> None:
        """[] (no model may be passed) is a valid choice, not a bad value."""
        self.assertEqual(conf.invalid_values(), [])
        self.assertNotIn("robust_queue.W002", deploy_ids())

    @override_settings(TASKS={"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}})
    def test_a_project_without_a_robust_queue_backend_is_not_warned(self) -> None:
        self.assertNotIn("robust_queue.W002", deploy_ids())
