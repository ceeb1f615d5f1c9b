"""Lifecycle hook registration (no database)."""

from __future__ import annotations

from django.test import SimpleTestCase, override_settings

from robust_queue.exceptions import ConfigurationError
from robust_queue.processes import hooks


class HookKindTests(SimpleTestCase):
    def test_an_unknown_process_kind_is_a_configuration_error(self) -> None:
        with self.assertRaisesMessage(
            ConfigurationError, "@on_start: unknown process kind(s) ['wroker']; use supervisor"
        ):
            hooks.on_start("wroker")


CALLS: list[tuple[str, str]] = []


def settings_hook(process: object) -> None:
    """Named in settings by the tests below."""
    CALLS.append(("settings", getattr(process, "kind", "?")))


class Process:
    def __init__(self, kind: str) -> None:
        self.kind = kind


class HookRunTests(SimpleTestCase):
    def setUp(self) -> None:
        CALLS.clear()
        saved = {key: list(value) for key, value in hooks._REGISTERED.items()}
        self.addCleanup(self._restore, saved)

    @staticmethod
    def _restore(saved: dict[tuple[str, str], list[hooks.Hook]]) -> None:
        hooks._REGISTERED.clear()
        hooks._REGISTERED.update(saved)

    def test_decorated_hooks_run_for_their_kinds_only(self) -> None:
        @hooks.on_start("worker")
        def warm(process: Process) -> None:
            CALLS.append(("warm", process.kind))

        hooks.run("worker", "on_start", Process("worker"))
        hooks.run("dispatcher", "on_start", Process("dispatcher"))
        hooks.run("worker", "on_stop", Process("worker"))
        self.assertEqual(CALLS, [("warm", "worker")])

    def test_a_hook_without_kinds_runs_for_every_kind(self) -> None:
        @hooks.on_exit()
        def bye(process: Process) -> None:
            CALLS.append(("bye", process.kind))

        for kind in hooks.KINDS:
            hooks.run(kind, "on_exit", Process(kind))
        self.assertEqual(CALLS, [("bye", kind) for kind in hooks.KINDS])

    def test_decorated_hooks_run_before_those_of_the_settings(self) -> None:
        @hooks.on_stop("scheduler")
        def first(process: Process) -> None:
            CALLS.append(("decorated", process.kind))

        setting = {"scheduler": {"on_stop": [f"{__name__}.settings_hook"]}}
        with override_settings(ROBUST_QUEUE={"hooks": setting}):
            hooks.run("scheduler", "on_stop", Process("scheduler"))
        self.assertEqual(CALLS, [("decorated", "scheduler"), ("settings", "scheduler")])

    def test_a_hook_that_raises_is_logged_and_the_others_still_run(self) -> None:
        @hooks.on_start("worker")
        def broken(process: Process) -> None:
            raise RuntimeError("cache down")

        @hooks.on_start("worker")
        def fine(process: Process) -> None:
            CALLS.append(("fine", process.kind))

        with self.assertLogs(hooks.logger, "ERROR") as logs:
            hooks.run("worker", "on_start", Process("worker"))
        self.assertEqual(CALLS, [("fine", "worker")])
        self.assertIn("on_start hook", logs.output[0])
        self.assertIn("RuntimeError: cache down", logs.output[0])


class HookValidationTests(SimpleTestCase):
    def test_good_hooks_validate(self) -> None:
        setting = {"worker": {"on_start": [f"{__name__}.settings_hook"]}}
        with override_settings(ROBUST_QUEUE={"hooks": setting}):
            self.assertEqual(hooks.validate(), [])

    def test_every_problem_is_named(self) -> None:
        setting = {
            "wroker": {"on_start": []},
            "worker": {"on_boot": [], "on_stop": ["no.such.module.hook", f"{__name__}.nothing"]},
        }
        with override_settings(ROBUST_QUEUE={"hooks": setting}):
            problems = hooks.validate()
        self.assertEqual(
            problems[:2],
            [
                "hooks: unknown process kind 'wroker'",
                "hooks['worker']: unknown event 'on_boot'",
            ],
        )
        self.assertEqual(len(problems), 4)
        self.assertTrue(problems[2].startswith("hooks['worker']['on_stop']: No module named 'no'"))
        self.assertIn('does not define a "nothing" attribute', problems[3])
