"""@aliases: a task declares the paths it was known by, and the registry
runs jobs that name them with it; one path never names two tasks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.test import SimpleTestCase

import robust_queue
from robust_queue.compat import Task
from robust_queue.exceptions import ConfigurationError, UnknownTaskError
from robust_queue.options import registry
from robust_queue.options.aliases import ALIASES
from robust_queue.options.task import RobustQueueTask
from testproject import renamed_tasks, tasks


def function(path: str) -> Callable[..., Any]:
    """A function whose import path is ``path`` (a module of an installed
    app, so that workers would run it)."""

    def body(*args: Any) -> str:
        return path

    module, _, name = path.rpartition(".")
    body.__module__, body.__qualname__, body.__name__ = module, name, name
    return body


class Declarations(SimpleTestCase):
    """Declares tasks for one test and forgets them (and their aliases) after."""

    def declare(self, path: str, **options: Any) -> Task[..., Any]:
        self.addCleanup(forget, path)
        return RobustQueueTask(
            func=function(path),
            priority=0,
            backend="default",
            queue_name="default",
            run_after=None,
            **options,
        )


def forget(path: str) -> None:
    registry._DECLARED.pop(path, None)
    registry._ALIASES.forget(path)


class OptionTests(SimpleTestCase):
    def test_the_decorator_and_the_keyword_build_the_same_sorted_paths(self) -> None:
        self.assertEqual(
            renamed_tasks.record_entry.aliases,
            ("testproject.legacy.record", "testproject.old_tasks.record_entry"),
        )
        self.assertEqual(ALIASES.build("b.c", "a.b", "b.c"), ("a.b", "b.c"))
        self.assertEqual(ALIASES.declared(["b.c", "a.b"]), ("a.b", "b.c"))
        self.assertEqual(ALIASES.declared("a.b"), ("a.b",))
        self.assertIsNone(ALIASES.declared([]))
        self.assertIsNone(ALIASES.of(tasks.add))

    def test_what_is_not_an_import_path_is_refused_by_both_spellings(self) -> None:
        for bad in ("not a path", "nodots", "a..b", "1a.b", "a.b.", "x" * 251 + ".long", 5):
            with self.subTest(bad=bad):
                with self.assertRaisesMessage(
                    ConfigurationError, f"aliases(): alias {bad!r} is not an import path"
                ):
                    robust_queue.aliases(bad)
                with self.assertRaisesMessage(
                    ConfigurationError, f"@task(aliases=...): alias {bad!r} is not an import path"
                ):
                    ALIASES.declared([bad])
        with self.assertRaisesMessage(
            ConfigurationError, "aliases(): name at least one old import path."
        ):
            robust_queue.aliases()
        with self.assertRaisesMessage(
            ConfigurationError, "@task(aliases=...) takes a list of import paths, not 5."
        ):
            ALIASES.declared(5)

    def test_stacked_over_a_plain_function_it_says_to_stack_it_over_task(self) -> None:
        with self.assertRaisesMessage(ConfigurationError, "@aliases must be stacked over @task"):
            robust_queue.aliases("a.b")(function("testproject.nowhere.f"))


class ResolveTests(Declarations):
    def test_an_alias_resolves_to_the_task_with_its_function_and_options(self) -> None:
        for old in renamed_tasks.record_entry.aliases:
            with self.subTest(old=old):
                self.assertIs(registry.declared(old), renamed_tasks.record_entry)
                self.assertEqual(
                    registry.resolve_task(old, "default").func, renamed_tasks.record_entry.func
                )
        flaky = registry.resolve_task(renamed_tasks.OLD_FLAKY, "separate")
        self.assertEqual(flaky.backend, "separate")
        self.assertEqual(flaky.retry, renamed_tasks.flaky.retry)

    def test_a_job_row_naming_an_old_path_rebuilds_the_new_task(self) -> None:
        class Row:
            task_path = renamed_tasks.OLD_RECORD
            backend_alias = "default"
            queue_name = "elsewhere"
            priority = 7
            run_after = None

        task = registry.rebuild_task(Row())
        self.assertEqual(task.module_path, "testproject.renamed_tasks.record_entry")
        self.assertEqual((task.queue_name, task.priority), ("elsewhere", 7))

    def test_aliases_are_known_paths_and_listed(self) -> None:
        known = registry.known_paths()
        self.assertIn(renamed_tasks.OLD_RECORD, known)
        self.assertIn("testproject.renamed_tasks.record_entry", known)
        self.assertIn(
            (renamed_tasks.OLD_FLAKY, "testproject.renamed_tasks.flaky"),
            registry.declared_aliases(),
        )

    def test_an_undeclared_path_is_still_unknown(self) -> None:
        with self.assertRaisesMessage(
            UnknownTaskError, "'testproject.old_tasks.nothing' names no task"
        ):
            registry.resolve_task("testproject.old_tasks.nothing", "default")

    def test_a_new_declaration_of_the_same_path_gives_up_the_old_aliases(self) -> None:
        self.declare("testproject.probe.moved", aliases=["testproject.probe.before"])
        self.assertIsNotNone(registry.declared("testproject.probe.before"))
        self.declare("testproject.probe.moved", aliases=["testproject.probe.earlier"])
        self.assertIsNone(registry.declared("testproject.probe.before"))
        self.assertIsNotNone(registry.declared("testproject.probe.earlier"))
        # The same declaration again (a re-imported module) is no clash.
        self.declare("testproject.probe.moved", aliases=["testproject.probe.earlier"])


class ClashTests(Declarations):
    def test_two_tasks_claiming_one_alias_is_an_error_naming_both(self) -> None:
        self.declare("testproject.probe.first", aliases=["testproject.probe.old"])
        with self.assertRaisesMessage(
            ConfigurationError,
            "Task testproject.probe.second: alias 'testproject.probe.old' is an alias of "
            "task testproject.probe.first too: an old path runs one task. Keep it in one @aliases().",
        ):
            self.declare("testproject.probe.second", aliases=["testproject.probe.old"])
        # Refused as a whole: the registry is as it was.
        self.assertIsNone(registry._DECLARED.get("testproject.probe.second"))
        self.assertEqual(
            registry.declared("testproject.probe.old").module_path, "testproject.probe.first"
        )  # type: ignore[union-attr]

    def test_an_alias_that_is_a_declared_task_s_path_is_an_error(self) -> None:
        with self.assertRaisesMessage(
            ConfigurationError,
            "Task testproject.probe.copy: alias 'testproject.tasks.add' is the path of a "
            "declared task, which runs its jobs.",
        ):
            self.declare("testproject.probe.copy", aliases=["testproject.tasks.add"])
        self.assertIs(registry.declared("testproject.tasks.add"), tasks.add)

    def test_a_task_declared_at_a_path_another_task_claims_is_an_error(self) -> None:
        with self.assertRaisesMessage(
            ConfigurationError,
            f"Task {renamed_tasks.OLD_RECORD}: its path is an alias of task "
            "testproject.renamed_tasks.record_entry",
        ):
            self.declare(renamed_tasks.OLD_RECORD)

    def test_an_alias_of_the_task_s_own_path_is_an_error(self) -> None:
        with self.assertRaisesMessage(
            ConfigurationError, "alias 'testproject.probe.self' is the task's own path."
        ):
            self.declare("testproject.probe.self", aliases=["testproject.probe.self"])
