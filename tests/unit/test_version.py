"""The version the package and its command report."""

from __future__ import annotations

import re
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

from django.test import SimpleTestCase

import robust_queue
from robust_queue.management.commands.robust_queue import Command


class VersionTests(SimpleTestCase):
    def test_the_package_has_a_version(self) -> None:
        self.assertRegex(robust_queue.__version__, r"^\d+\.\d+\.\d+")

    def test_the_command_reports_robust_queues_version_not_djangos(self) -> None:
        for argv in (["robust_queue", "--version"], ["robust_queue", "clear", "--version"]):
            out = StringIO()
            with (
                self.subTest(argv=argv),
                redirect_stdout(out),
                self.assertRaises(SystemExit) as done,
            ):
                Command().run_from_argv(["manage.py", *argv])
            self.assertEqual(done.exception.code, 0)
            self.assertEqual(out.getvalue().strip(), robust_queue.__version__)

    def test_the_version_is_the_one_the_package_metadata_reads(self) -> None:
        """pyproject.toml reads robust_queue.__version__ (one source)."""
        pyproject = Path(robust_queue.__file__).parents[1] / "pyproject.toml"
        self.assertTrue(
            re.search(r'version = \{ attr = "robust_queue.__version__" \}', pyproject.read_text())
        )
