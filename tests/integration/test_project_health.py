"""CI gates that live in the suite: no missing migration, clean checks."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command
from django.test import TestCase


class ProjectHealthTests(TestCase):
    databases = {"default", "queue"}

    def test_no_model_change_lacks_a_migration(self) -> None:
        out = StringIO()
        try:
            call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
        except SystemExit as exc:  # makemigrations --check exits 1
            self.fail(f"missing migrations (exit {exc.code}):\n{out.getvalue()}")

    def test_system_checks_pass_at_warning_level(self) -> None:
        call_command("check", "--fail-level", "WARNING", "--database", "default", stdout=StringIO())
