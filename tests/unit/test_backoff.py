"""The one exponential back-off every retry loop uses."""

from __future__ import annotations

from unittest import mock

from django.test import SimpleTestCase

from robust_queue import backoff
from robust_queue.backoff import exponential


class ExponentialTests(SimpleTestCase):
    def test_the_first_pause_is_the_base_and_each_next_doubles(self) -> None:
        """Try 1 failed: base; try 2: twice that; and so on."""
        self.assertEqual([exponential(0.1, n, 10.0) for n in (1, 2, 3, 4)], [0.1, 0.2, 0.4, 0.8])

    def test_the_ceiling_caps_the_pause(self) -> None:
        self.assertEqual(exponential(1.0, 6, 30.0), 30.0)
        self.assertEqual(exponential(1.0, 5, 30.0), 16.0)

    def test_a_base_over_the_ceiling_gives_the_ceiling(self) -> None:
        self.assertEqual(exponential(2.0, 1, 0.5), 0.5)

    def test_an_attempt_below_one_counts_as_the_first(self) -> None:
        self.assertEqual(exponential(0.5, 0, 10.0), 0.5)
        self.assertEqual(exponential(0.5, -3, 10.0), 0.5)

    def test_a_very_long_run_never_overflows(self) -> None:
        """A loop that failed for weeks still gets the ceiling."""
        self.assertEqual(exponential(0.1, 10**9, 5.0), 5.0)

    def test_jitter_draws_between_zero_and_the_pause(self) -> None:
        with mock.patch.object(backoff.random, "uniform", return_value=0.123) as uniform:
            self.assertEqual(exponential(0.02, 3, 0.5, jitter=True), 0.123)
        uniform.assert_called_once_with(0, 0.08)
        for attempt in range(1, 10):
            pause = exponential(0.02, attempt, 0.5, jitter=True)
            self.assertGreaterEqual(pause, 0)
            self.assertLessEqual(pause, min(0.02 * 2 ** (attempt - 1), 0.5))
