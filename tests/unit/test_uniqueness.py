"""@unique options: bad ones are clear errors at decoration; states and
within decide what counts."""

from __future__ import annotations

from datetime import timedelta
from unittest import skipUnless

from django.test import SimpleTestCase
from django.utils import timezone

from robust_queue import unique
from robust_queue.compat import TASK_TAKES_OPTIONS, task
from robust_queue.exceptions import ConfigurationError
from robust_queue.options.uniqueness import ONCE, UNIQUE, Uniqueness
from testproject import unique_tasks as ut


def doomed(x: int) -> int:
    return x


class BadOptionTests(SimpleTestCase):
    def test_bad_options_name_the_problem(self) -> None:
        hour = timedelta(hours=1)
        cases = [
            ({"within": timedelta(seconds=-1)}, "'within' must be a positive timedelta"),
            ({"within": 0}, "'within' must be a positive timedelta or None, not 0"),
            ({"states": "ready"}, "'states' must be a tuple of state names, not 'ready'"),
            ({"states": ()}, "'states' must name some of ready, scheduled"),
            ({"states": ("ready", "done")}, "got ('ready', 'done')"),
            ({"states": ("running",)}, "'running' can count only with 'ready'"),
            ({"states": ("ready",)}, "'ready' can count only with 'scheduled' and 'blocked'"),
            (
                {"states": ("ready", "scheduled", "blocked", "finished"), "within": hour},
                "'finished' can count only with 'running'",
            ),
            (
                {"states": ("ready", "scheduled", "blocked", "running", "finished")},
                "'finished' in 'states' needs 'within'",
            ),
            (
                {"states": ("ready", "scheduled", "blocked", "running"), "within": hour},
                "'within' counts ended jobs: add 'finished'",
            ),
            ({"key": 3}, "'key' must be a string or a callable, not 3"),
            ({"key": ""}, "'key' must not be empty"),
        ]
        for options, message in cases:
            with (
                self.subTest(options=options),
                self.assertRaisesMessage(ConfigurationError, message),
            ):
                unique(**options)  # type: ignore[arg-type]

    def test_unique_must_be_stacked_over_task(self) -> None:
        with self.assertRaisesMessage(ConfigurationError, "@unique must be stacked over @task"):
            unique()(doomed)  # type: ignore[arg-type]

    @skipUnless(TASK_TAKES_OPTIONS, "Django 6.0's @task takes no extra keywords")
    def test_bad_task_keyword_options_are_clear_errors(self) -> None:
        cases = {
            "takes True or a dict of unique() options, not 'yes'": "yes",
            "unexpected keyword argument 'colour'": {"colour": 1},
            "'within' must be a positive timedelta": {"within": timedelta(0)},
        }
        for message, options in cases.items():
            with (
                self.subTest(message=message),
                self.assertRaisesMessage(ConfigurationError, message),
            ):
                task(unique=options)(doomed)

    @skipUnless(TASK_TAKES_OPTIONS, "Django 6.0's @task takes no extra keywords")
    def test_unique_false_is_no_option(self) -> None:
        self.assertIsNone(task(unique=False)(doomed).unique)


class CountingTests(SimpleTestCase):
    def test_default_states_are_waiting_and_running(self) -> None:
        uniqueness = UNIQUE.build()
        self.assertEqual(uniqueness.counted_states, ("ready", "scheduled", "blocked", "running"))
        self.assertIs(uniqueness.counts("claimed", None, None), True)
        self.assertIs(uniqueness.counts("finished", timezone.now(), None), False)

    def test_within_adds_finished_for_that_long(self) -> None:
        uniqueness = UNIQUE.build(within=timedelta(minutes=5))
        now = timezone.now()
        self.assertIs(uniqueness.counts("finished", now - timedelta(minutes=4), now), True)
        self.assertIs(uniqueness.counts("finished", now - timedelta(minutes=6), now), False)
        self.assertIs(uniqueness.counts("failed", now, now), False)

    def test_an_idempotency_key_counts_in_every_state(self) -> None:
        for state in ("ready", "claimed", "finished", "failed"):
            self.assertIs(ONCE.counts(state, timezone.now(), None), True)

    def test_the_decorator_sets_the_option_on_the_declared_task(self) -> None:
        self.assertIsInstance(ut.per_account.unique, Uniqueness)
        self.assertIs(ut.per_account.using(priority=3).unique, ut.per_account.unique)
