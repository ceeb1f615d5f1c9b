"""``@rate_limit``: options, keys, windows and errors (no database)."""

from __future__ import annotations

from datetime import timedelta

from django.test import SimpleTestCase

import robust_queue
from robust_queue import limits_concurrency
from robust_queue.compat import TASK_TAKES_OPTIONS, task
from robust_queue.exceptions import ConfigurationError
from robust_queue.options.rate_limits import KEY_MAX_LENGTH, Rate, limit_for, rate_key
from testproject import coordination_tasks as co

HOUR = timedelta(hours=1)


def _sample(account: str = "") -> None:
    """A function of this module to declare tasks from."""


class RateLimitOptionTests(SimpleTestCase):
    def test_the_decorator_sets_the_rate(self) -> None:
        rate = limit_for(co.rated)
        assert rate is not None
        self.assertEqual((rate.to, rate.per), (2, HOUR))
        self.assertIs(limit_for(co.rated.using(priority=3)), rate)

    def test_bad_options_are_refused(self) -> None:
        for options, message in (
            ({"to": 0, "per": HOUR}, "'to' must be a whole number >= 1, not 0."),
            ({"to": -3, "per": HOUR}, "not -3"),
            ({"to": True, "per": HOUR}, "not True"),
            ({"to": 2, "per": timedelta(seconds=-1)}, "'per' must be a timedelta of at least 1 ms"),
            ({"to": 2, "per": 60}, "not 60"),
            ({"to": 2, "per": HOUR, "key": 5}, "'key' must be a string, a callable or None"),
            ({"to": 2, "per": HOUR, "group": ""}, "'group' must be a non-empty string"),
        ):
            with (
                self.subTest(options=options),
                self.assertRaisesMessage(ConfigurationError, message),
            ):
                robust_queue.rate_limit(**options)

    def test_the_task_keyword_is_the_decorator(self) -> None:
        if not TASK_TAKES_OPTIONS:
            self.skipTest("Django 6.0's @task takes no backend options")
        declared = task(rate_limit={"to": 3, "per": HOUR})(_sample)
        self.assertEqual(limit_for(declared), Rate(to=3, per=HOUR))
        with self.assertRaisesMessage(ConfigurationError, "'to' must be a whole number"):
            task(rate_limit={"to": 0, "per": HOUR})(_sample)

    def test_keys_are_per_task_or_group_and_bounded(self) -> None:
        self.assertEqual(
            rate_key(co.rated, ("acme",), {}), "testproject.coordination_tasks.rated/acme"
        )
        self.assertEqual(
            rate_key(co.rated_and_limited, (1,), {}),
            "testproject.coordination_tasks.rated_and_limited/",
        )
        # Tasks of this module's own: the project's declarations stay as they are.
        sample = task()(_sample)
        grouped = robust_queue.rate_limit(to=1, per=HOUR, key="x", group="api")(sample)
        self.assertEqual(rate_key(grouped, (), {}), "api/x")
        long = robust_queue.rate_limit(to=1, per=HOUR, key="k" * 400)(sample)
        self.assertEqual(len(rate_key(long, (), {})), KEY_MAX_LENGTH)
        self.assertEqual(rate_key(sample, (), {}), "")

    def test_windows_are_aligned_to_the_epoch(self) -> None:
        rate = Rate(to=1, per=timedelta(minutes=1))
        self.assertEqual(rate.window_of(125_000_000), 120_000_000)
        self.assertEqual(rate.window_of(120_000_000), 120_000_000)

    def test_a_concurrency_group_may_not_take_the_rate_prefix(self) -> None:
        with self.assertRaisesMessage(ConfigurationError, "'group' must not start with 'rate:'"):
            limits_concurrency(key="k", group="rate:api")

    def test_a_concurrency_group_may_not_take_the_dependency_key(self) -> None:
        """``dep:`` is where jobs wait on others (models/job_dependency.py):
        a group there would never be released by concurrency upkeep."""
        with self.assertRaisesMessage(ConfigurationError, "'dep:' or 'fair:', not 'dep:'"):
            limits_concurrency(key="k", group="dep:")
