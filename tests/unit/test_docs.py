"""The documentation cannot rot: settings, exceptions, snippets and links.

- Every ``ROBUST_QUEUE`` key (``conf.KEYS``) and every key a backend's
  ``OPTIONS`` or a worker/dispatcher/scheduler/recurring entry takes is
  named in docs/reference/settings.md, and the page names no other key.
- Every exception class of robust_queue/exceptions.py has a row in
  docs/reference/signals-exceptions.md, and so has every signal of
  robust_queue/signals.py (and the page names no other).
- Every option of every management command (``robust_queue`` and each
  subcommand) is named in the section of docs/reference/commands.md or
  docs/operations/health-status.md that documents the command.
- README.md (the landing page) links with paths relative to the
  repository root to files that exist and that the sdist ships.
- The Python blocks marked ``<!-- runnable -->`` in README.md and
  docs/getting-started.md run, in order, as one module of the test
  project, and the jobs they enqueue succeed (the operations pages'
  blocks: tests/unit/test_docs_operations.py).
- Every link from a page to ``tests/`` names a file that exists and test
  methods that it defines; every other link that leaves docs/ names a file
  that exists.
"""

from __future__ import annotations

import fnmatch
import inspect
import json
import re
import tomllib
from dataclasses import fields
from pathlib import Path

from django.core.management.base import BaseCommand
from django.dispatch import Signal
from django.test import RequestFactory, SimpleTestCase

from robust_queue import conf, exceptions, signals
from robust_queue.management.commands.robust_queue import SUBCOMMANDS
from robust_queue.management.commands.robust_queue import Command as RobustQueueCommand
from robust_queue.models import FailedExecution, Job, ScheduledExecution
from robust_queue.options import recurrence
from robust_queue.options.backend_options import KNOWN_OPTIONS
from robust_queue.processes.config import DispatcherConfig, SchedulerConfig, WorkerConfig
from tests.doc_snippets import SnippetTestCase
from tests.helpers import work_off

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CODE = ROOT / "robust_queue"
SETTINGS_PAGE = DOCS / "reference" / "settings.md"
EXCEPTIONS_PAGE = DOCS / "reference" / "signals-exceptions.md"
README = ROOT / "README.md"
COMMAND_PAGES = (DOCS / "reference" / "commands.md", DOCS / "operations" / "health-status.md")

TABLE_KEY = re.compile(r"^\| `([a-z_]+)` \|", re.MULTILINE)
TEST_LINK = re.compile(r"\[([^\]]+)\]\(((?:\.\./)+tests/[^)#\s]+)\)")
# Relative links and images: [text](target) or [text](target#anchor).
RELATIVE_LINK = re.compile(r"\]\((?!https?:|mailto:|#)([^)#\s]+)[^)]*\)")
EXCEPTION_ROW = re.compile(r"^\| `(\w+)`", re.MULTILINE)
# A signal row's first cell: `name` or `name`, `other`.
SIGNAL_CELL = re.compile(r"^\| (`\w+`(?:, `\w+`)*) \|", re.MULTILINE)
SECTION = re.compile(r"^## (.*)$", re.MULTILINE)
# Files setuptools puts in every sdist without a MANIFEST.in line.
SDIST_ALWAYS = {"README.md", "LICENSE", "pyproject.toml"}


def robust_queue_keys() -> set[str]:
    """Top-level ``ROBUST_QUEUE`` keys: the table in ``conf.KEYS`` (any
    other key is check error robust_queue.E020; tests/unit/test_conf.py
    holds the code's reads to the table)."""
    return set(conf.KEYS)


def exception_classes() -> set[str]:
    """The exception classes robust_queue/exceptions.py defines."""
    return {
        name
        for name, value in vars(exceptions).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == exceptions.__name__
    }


def sdist_patterns() -> list[str]:
    """MANIFEST.in's ``include`` and ``recursive-include`` lines as globs."""
    patterns = []
    for line in (ROOT / "MANIFEST.in").read_text().splitlines():
        words = line.split()
        if words[:1] == ["include"]:
            patterns += words[1:]
        elif words[:1] == ["recursive-include"] and len(words) > 2:
            patterns += [f"{words[1]}/*{pattern}" for pattern in words[2:]]
    return patterns


def relative_links(page: Path) -> list[str]:
    return RELATIVE_LINK.findall(page.read_text())


def nested_keys() -> set[str]:
    """Keys of worker, dispatcher, scheduler and recurring task entries."""
    roles = (WorkerConfig, DispatcherConfig, SchedulerConfig)
    return {f.name for role in roles for f in fields(role)} | set(recurrence.SETTINGS_FIELDS)


def option_keys() -> set[str]:
    """``TASKS[alias]["OPTIONS"]`` keys the code reads or accepts."""
    # Where backend options are read (elsewhere ``options`` are a
    # management command's).
    code = "\n".join((CODE / name).read_text() for name in ("backend.py", "conf.py", "checks.py"))
    read = set(re.findall(r"options\.get\(\s*\"(\w+)\"", code))
    return read | set(KNOWN_OPTIONS)


class SettingsPageTests(SimpleTestCase):
    def test_the_key_search_finds_the_keys_it_should(self) -> None:
        """The search itself works (guards against a silent empty set)."""
        self.assertTrue(
            {"database", "workers", "recurring_tasks", "admin_mask"} <= robust_queue_keys()
        )
        self.assertLessEqual({"database", "max_payload_bytes"}, option_keys())

    def test_every_key_the_code_reads_is_documented(self) -> None:
        """The settings page names every key read from settings."""
        documented = set(TABLE_KEY.findall(SETTINGS_PAGE.read_text()))
        missing = (robust_queue_keys() | nested_keys() | option_keys()) - documented
        self.assertEqual(missing, set(), "keys missing from docs/reference/settings.md")

    def test_every_key_of_the_settings_table_is_documented(self) -> None:
        """The settings page names every key of ``conf.KEYS``."""
        documented = set(TABLE_KEY.findall(SETTINGS_PAGE.read_text()))
        self.assertEqual(set(conf.KEYS) - documented, set(), "conf.KEYS keys missing")

    def test_every_documented_key_is_read_by_the_code(self) -> None:
        """The settings page invents no key."""
        documented = set(TABLE_KEY.findall(SETTINGS_PAGE.read_text()))
        known = robust_queue_keys() | nested_keys() | option_keys()
        self.assertEqual(documented - known, set(), "keys the code does not read")


class TestLinkTests(SimpleTestCase):
    def test_links_to_tests_name_existing_files_and_methods(self) -> None:
        """Each ``[`test_x`](../tests/...)`` names a test that exists."""
        checked = 0
        for page in DOCS.rglob("*.md"):
            for text, target in TEST_LINK.findall(page.read_text()):
                path = (page.parent / target).resolve()
                self.assertTrue(path.is_file(), f"{page.name}: {target} does not exist")
                source = path.read_text()
                for name in re.findall(r"`(test_\w+)`", text):
                    self.assertIn(f"def {name}(", source, f"{page.name}: {name} in {target}")
                checked += 1
        self.assertGreater(checked, 20)


class ExceptionsPageTests(SimpleTestCase):
    def test_the_class_search_finds_the_classes_it_should(self) -> None:
        """The search itself works (guards against a silent empty set)."""
        self.assertLessEqual(
            {"RobustQueueError", "FinalizeError", "TasksFrameworkMissingError"},
            exception_classes(),
        )

    def test_every_exception_class_is_documented(self) -> None:
        """Each class of robust_queue/exceptions.py has a row on the page."""
        documented = set(EXCEPTION_ROW.findall(EXCEPTIONS_PAGE.read_text()))
        missing = exception_classes() - documented
        self.assertEqual(missing, set(), "classes missing from signals-exceptions.md")


def signal_names() -> set[str]:
    """The signals robust_queue/signals.py defines."""
    return {name for name, value in vars(signals).items() if isinstance(value, Signal)}


def documented_signals() -> set[str]:
    """The signals of the page's "Robust Queue's own signals" table."""
    text = EXCEPTIONS_PAGE.read_text()
    own = text[text.index("### Robust Queue's own signals") : text.index("## Exceptions")]
    return {name for cell in SIGNAL_CELL.findall(own) for name in re.findall(r"`(\w+)`", cell)}


class SignalsPageTests(SimpleTestCase):
    def test_the_signal_search_finds_the_signals_it_should(self) -> None:
        """The searches themselves work (guards against silent empty sets)."""
        expected = {"job_retried", "job_timed_out", "queue_paused", "queue_resumed"}
        self.assertLessEqual(expected, signal_names())
        self.assertLessEqual(expected, documented_signals())

    def test_every_signal_is_documented_and_no_other(self) -> None:
        self.assertEqual(documented_signals(), signal_names())


def command_options(command: BaseCommand) -> set[str]:
    """The long options a command adds to Django's own."""

    class Bare(BaseCommand):
        pass

    def options(of: BaseCommand) -> set[str]:
        parser = of.create_parser("manage.py", "robust_queue")
        return {
            o for action in parser._actions for o in action.option_strings if o.startswith("--")
        }

    return options(command) - options(Bare())


def command_section(name: str) -> str:
    """The text of the section of the command pages that documents the
    ``robust_queue`` subcommand ``name`` ("" for the command itself)."""
    wanted = "`manage.py robust_queue`" if not name else None
    for page in COMMAND_PAGES:
        text = page.read_text()
        headings = list(SECTION.finditer(text))
        for heading, following in zip(headings, [*headings[1:], None], strict=True):
            title = heading.group(1)
            found = (
                title == wanted
                if wanted
                else (f"robust_queue {name}`" in title or f"/ `{name}`" in title)
            )
            if found:
                return text[heading.end() : following.start() if following else len(text)]
    raise AssertionError(f"no section documents robust_queue {name}".strip())


class CommandsPageTests(SimpleTestCase):
    def test_the_option_search_finds_the_options_it_should(self) -> None:
        """The search itself works (guards against a silent empty set)."""
        self.assertLessEqual({"--check", "--mode"}, command_options(RobustQueueCommand()))
        self.assertLessEqual({"--max-latency", "--json"}, command_options(SUBCOMMANDS["health"]()))

    def test_every_option_of_every_command_is_documented(self) -> None:
        """Each option is named (as `--option`) in its command's section."""
        # A deprecated name (prune) is documented in its new name's section.
        commands = {
            "": RobustQueueCommand,
            **{name: command for name, command in SUBCOMMANDS.items() if name != "prune"},
        }
        self.assertTrue(issubclass(SUBCOMMANDS["prune"], SUBCOMMANDS["clear"]))
        for name, command in commands.items():
            section = command_section(name)
            for option in sorted(command_options(command())):
                with self.subTest(command=name or "robust_queue", option=option):
                    self.assertIn(f"`{option}", section)


class LinkTests(SimpleTestCase):
    def test_readme_links_resolve_from_the_repository_root(self) -> None:
        """README.md's links and image are paths from the root (GitHub)."""
        targets = relative_links(README)
        self.assertGreater(len(targets), 5)
        for target in targets:
            self.assertFalse(target.startswith("/"), target)
            self.assertTrue((ROOT / target).is_file(), f"README.md: {target} does not exist")

    def test_the_sdist_ships_what_the_readme_links_to(self) -> None:
        """Each README link target matches a MANIFEST.in line, so the links
        work in the sdist too (scripts/check-wheel.sh checks the archive)."""
        patterns = sdist_patterns()
        for target in relative_links(README):
            shipped = target in SDIST_ALWAYS or any(
                fnmatch.fnmatchcase(target, pattern) for pattern in patterns
            )
            self.assertTrue(shipped, f"MANIFEST.in does not ship {target}")

    def test_links_that_leave_the_docs_name_existing_files(self) -> None:
        """A page's link to the repository's root files (or anywhere outside
        docs/) names a file that exists; links inside docs/ are MkDocs'."""
        checked = 0
        for page in DOCS.rglob("*.md"):
            for target in relative_links(page):
                path = (page.parent / target).resolve()
                if path.is_relative_to(DOCS):
                    continue
                self.assertTrue(path.exists(), f"{page.name}: {target} does not exist")
                checked += 1
        self.assertGreater(checked, 20)


class PackageDescriptionTests(SimpleTestCase):
    def test_the_index_page_shows_a_description_without_relative_links(self) -> None:
        """The package's long description (an index page renders it with no
        repository beside it) is PACKAGE.md, which links nowhere relative and
        shows no image from the checkout; README.md stays the repository's
        landing page."""
        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        self.assertEqual(project["readme"], "PACKAGE.md")
        page = (ROOT / "PACKAGE.md").read_text()
        self.assertEqual(relative_links(ROOT / "PACKAGE.md"), [])
        self.assertNotIn("<img", page)
        self.assertIn("docs/", page)


class SnippetTests(SnippetTestCase):
    """The runnable snippets are complete: imports included, nothing
    assumed from the page around them (tests/doc_snippets.py runs them)."""

    def test_getting_started_runs_and_its_jobs_succeed(self) -> None:
        self.run_page("docs/getting-started.md")
        self.assert_enqueued_jobs_succeed()
        self.assertEqual(Job.objects.filter(finished_at__isnull=False).count(), 1)
        self.assertEqual(ScheduledExecution.objects.count(), 1)

    def test_readme_runs_and_its_jobs_succeed(self) -> None:
        """The landing page's twenty lines are complete and work; its
        tasks.py enqueues nothing at import, its view does."""
        self.run_view_of_page("README.md")

    def test_the_package_description_runs_and_its_jobs_succeed(self) -> None:
        """The index page's example is the README's, complete and working."""
        self.run_view_of_page("PACKAGE.md")

    def run_view_of_page(self, page: str) -> None:
        module = self.run_page(page)
        self.assertFalse(Job.objects.exists(), f"{page} enqueues at import")
        response = module.start_report(RequestFactory().get("/report"))
        self.assertEqual(json.loads(response.content)["status"], "READY")
        self.assert_enqueued_jobs_succeed()
        self.assertEqual(Job.objects.get().return_value, {"rows": 3})

    def assert_enqueued_jobs_succeed(self) -> None:
        work_off()
        self.assertFalse(FailedExecution.objects.exists())
        unfinished = Job.objects.filter(finished_at__isnull=True)
        # Jobs enqueued to run later stay scheduled; everything else ran.
        self.assertEqual(
            set(unfinished.values_list("pk", flat=True)),
            set(ScheduledExecution.objects.values_list("job_id", flat=True)),
        )
