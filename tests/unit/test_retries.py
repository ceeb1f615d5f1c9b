"""Retry policies: validation and back-off (no database)."""

from __future__ import annotations

from datetime import timedelta

from django.test import SimpleTestCase

from robust_queue import retry
from robust_queue.exceptions import ConfigurationError, ProcessExitError, RetryPolicyError
from robust_queue.options.retries import MAX_DELAY, RetryPolicy, policy_for
from robust_queue.options.retries import retry_in as task_retry_in
from testproject import control_tasks as ct
from testproject import tasks


class PolicyTests(SimpleTestCase):
    def test_exponential_backoff_doubles_up_to_the_cap(self) -> None:
        policy = RetryPolicy(
            attempts=10, wait=timedelta(seconds=2), max_wait=timedelta(seconds=10), jitter=0
        )
        delays = [policy.delay(n).total_seconds() for n in range(1, 6)]
        self.assertEqual(delays, [2, 4, 8, 10, 10])

    def test_a_high_attempt_number_stays_at_the_cap(self) -> None:
        """Doubling 3 s 45 times would overflow timedelta before the cap."""
        policy = RetryPolicy(attempts=200, wait=timedelta(seconds=3), jitter=0)
        self.assertEqual(policy.delay(46), policy.max_wait)
        self.assertEqual(policy.delay(10_000), policy.max_wait)

    def test_jitter_stays_within_its_fraction(self) -> None:
        policy = RetryPolicy(wait=timedelta(seconds=100), jitter=0.2)
        delays = {policy.delay(1).total_seconds() for _ in range(200)}
        self.assertTrue(all(80 <= d <= 120 for d in delays))
        self.assertGreater(len(delays), 1)

    def test_fixed_and_callable_backoff(self) -> None:
        fixed = RetryPolicy(backoff="fixed", wait=timedelta(seconds=7))
        self.assertEqual(fixed.delay(4), timedelta(seconds=7))
        custom = RetryPolicy(backoff=lambda attempt: attempt * 1.5)
        self.assertEqual(custom.delay(2), timedelta(seconds=3))
        as_delta = RetryPolicy(backoff=lambda attempt: timedelta(minutes=attempt))
        self.assertEqual(as_delta.delay(3), timedelta(minutes=3))

    def test_retry_in_counts_attempts_and_filters_errors(self) -> None:
        policy = RetryPolicy(
            attempts=3,
            backoff="fixed",
            wait=timedelta(seconds=5),
            retry_on=(ValueError, ProcessExitError),
            discard_on=(UnicodeError,),
        )
        self.assertEqual(policy.retry_in(ValueError(), 1), timedelta(seconds=5))
        self.assertIsNotNone(policy.retry_in(ProcessExitError(), 2))
        self.assertIsNone(policy.retry_in(ValueError(), 3), "attempts exhausted")
        self.assertIsNone(policy.retry_in(KeyError(), 1), "not in retry_on")
        self.assertIsNone(policy.retry_in(UnicodeError(), 1), "discard_on wins")

    def test_the_default_retries_any_exception(self) -> None:
        self.assertIsNotNone(RetryPolicy().retry_in(ProcessExitError("gone"), 1))


class BrokenBackoffTests(SimpleTestCase):
    def test_a_backoff_that_raises_or_returns_no_delay_is_a_policy_error(self) -> None:
        def raises(attempt: int) -> float:
            raise ZeroDivisionError

        cases: list[tuple[object, str]] = [
            (raises, "raised ZeroDivisionError() for attempt 2"),
            (lambda attempt: "soon", "returned 'soon' for attempt 2, not a timedelta"),
            (lambda attempt: None, "returned None for attempt 2, not a timedelta"),
            (lambda attempt: True, "returned True for attempt 2, not a timedelta"),
            (lambda attempt: -1, "returned -1 for attempt 2, not a delay from 0 to 365 days"),
            (lambda attempt: float("nan"), "returned nan for attempt 2, not a delay"),
            (lambda attempt: 1e300, "returned 1e+300 for attempt 2, not a delay"),
            (lambda attempt: MAX_DELAY * 2, "for attempt 2, not a delay from 0 to 365 days"),
        ]
        for backoff, message in cases:
            policy = RetryPolicy(backoff=backoff)  # type: ignore[arg-type]
            with self.subTest(message), self.assertRaisesMessage(RetryPolicyError, message):
                policy.delay(2)

    def test_a_fixed_wait_past_the_limit_is_a_policy_error(self) -> None:
        policy = RetryPolicy(backoff="fixed", wait=timedelta(days=400))
        with self.assertRaisesMessage(RetryPolicyError, "its fixed wait returned"):
            policy.delay(1)

    def test_an_exponential_wait_stays_within_the_limit(self) -> None:
        policy = RetryPolicy(wait=timedelta(days=1), max_wait=timedelta.max, jitter=0)
        self.assertEqual(policy.delay(100), MAX_DELAY)

    def test_the_task_s_retry_decision_never_raises(self) -> None:
        """A policy that cannot decide means no retry, logged with the task."""
        with self.assertLogs("robust_queue.options.retries", "ERROR") as logs:
            self.assertIsNone(task_retry_in(ct.backoff_raises, ValueError(), 1, job="abc"))
        self.assertIn("Job abc of task testproject.control_tasks.backoff_raises", logs.output[0])


class DecoratorTests(SimpleTestCase):
    def test_bad_policies_fail_at_decoration(self) -> None:
        cases = [
            ({"attempts": -1}, "'attempts' must be at least 1"),
            ({"attempts": 0}, "'attempts' must be at least 1"),
            ({"attempts": "3"}, "'attempts' must be an integer"),
            ({"backoff": "linear"}, "'backoff' must be"),
            ({"wait": 3}, "'wait' must be a timedelta"),
            ({"wait": timedelta(days=366)}, "'wait' must be a timedelta from 0 to 365 days"),
            ({"max_wait": timedelta(-1)}, "'max_wait' must be a timedelta from 0 to 365 days"),
            ({"jitter": 2}, "'jitter' must be between 0 and 1"),
            ({"jitter": True}, "'jitter' must be between 0 and 1, not True"),
            ({"retry_on": ("ValueError",)}, "'retry_on' must be a tuple"),
        ]
        for kwargs, message in cases:
            with self.subTest(kwargs), self.assertRaisesMessage(ConfigurationError, message):
                retry(**kwargs)

    def test_a_single_exception_class_is_accepted(self) -> None:
        policy = RetryPolicy(retry_on=(TimeoutError,))
        retry(retry_on=TimeoutError)  # type: ignore[arg-type]
        self.assertEqual(policy.retry_on, (TimeoutError,))

    def test_using_copies_keep_the_policy(self) -> None:
        policy = policy_for(ct.flaky.using(priority=3))
        assert policy is not None
        self.assertEqual(policy.attempts, 3)
        self.assertIsNone(policy_for(tasks.add))

    def test_the_decorator_goes_over_task(self) -> None:
        with self.assertRaisesMessage(ConfigurationError, "stacked over @task"):
            retry()(lambda: None)  # type: ignore[arg-type]
