"""docs/hooks.py includes files from outside docs/ in a page at build time
(the changelog page shows CHANGELOG.md itself), their links made relative
to the page."""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path

from django.test import SimpleTestCase

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
assert _spec is not None and _spec.loader is not None
hooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hooks)


class IncludeTests(SimpleTestCase):
    def test_the_changelog_page_is_the_changelog(self) -> None:
        page = (ROOT / "docs" / "changelog.md").read_text()
        built = hooks.included(page, "changelog.md")
        self.assertIn((ROOT / "CHANGELOG.md").read_text(), built)
        self.assertNotIn("<!-- include:", built)

    def test_included_links_are_made_relative_to_the_page(self) -> None:
        with tempfile.TemporaryDirectory() as root:
            Path(root, "NOTES.md").write_text(
                "[a](docs/reference/usage.md#retry) [b](BENCHMARKS.md) "
                "[c](https://example.com/x) [d](#here) ![e](docs/admin.png)\n"
            )
            line = "<!-- include: NOTES.md -->"
            top = hooks.included(f"# Notes\n{line}\n", "notes.md", Path(root))
            deep = hooks.included(f"{line}\n", "operations/notes.md", Path(root))
        self.assertEqual(
            top,
            "# Notes\n[a](reference/usage.md#retry) [b](../BENCHMARKS.md) "
            "[c](https://example.com/x) [d](#here) ![e](admin.png)\n\n",
        )
        self.assertIn("[a](../reference/usage.md#retry) [b](../../BENCHMARKS.md)", deep)

    def test_a_missing_file_fails_the_build(self) -> None:
        with self.assertRaises(FileNotFoundError):
            hooks.included("<!-- include: NO_SUCH_FILE.md -->\n", "x.md")
