"""Small readers the commands and the worker use: human spans for
``robust_queue status`` and the resident memory for recycling."""

from __future__ import annotations

import resource
from datetime import timedelta
from unittest import mock

from django.test import SimpleTestCase
from django.utils import timezone

from robust_queue.operations.status import ago, short
from robust_queue.processes import memory


class SpanTests(SimpleTestCase):
    def test_short_spans_in_the_unit_that_reads_best(self) -> None:
        cases = {
            timedelta(seconds=0): "0s",
            timedelta(seconds=59): "59s",
            timedelta(seconds=90): "2m",
            timedelta(minutes=59): "59m",
            timedelta(minutes=90): "1.5h",
            timedelta(hours=23): "23.0h",
            timedelta(days=3, hours=12): "3.5d",
        }
        for span, text in cases.items():
            with self.subTest(span=span):
                self.assertEqual(short(span), text)

    def test_ago_counts_from_now(self) -> None:
        self.assertEqual(ago(timezone.now() - timedelta(minutes=5)), "5m ago")

    def test_a_moment_in_the_future_is_now(self) -> None:
        """Clocks of two hosts disagree: never a negative age."""
        self.assertEqual(ago(timezone.now() + timedelta(minutes=5)), "0s ago")

    def test_a_missing_moment_is_a_dash(self) -> None:
        self.assertEqual(ago(None), "-")
        self.assertEqual(ago("yesterday"), "-")


class ResidentMemoryTests(SimpleTestCase):
    def peak_mib(self) -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def test_the_current_rss_is_positive_and_at_most_the_peak(self) -> None:
        rss = memory.rss_mib()
        self.assertGreater(rss, 1.0)
        self.assertLessEqual(rss, self.peak_mib() + 1.0)

    def test_it_grows_with_what_this_process_holds(self) -> None:
        """Read with 64 MiB held, then without: a block that large is its
        own mapping, given back when freed, whereas memory freed before the
        test may be given back at any moment (a ``before`` would drift)."""
        ballast = bytearray(64 * memory.MIB)
        ballast[::4096] = b"x" * len(ballast[::4096])  # touch every page
        holding = memory.rss_mib()
        del ballast
        self.assertGreater(holding, memory.rss_mib() + 32)

    def test_without_proc_the_peak_is_used(self) -> None:
        with mock.patch("builtins.open", side_effect=OSError("no /proc here")):
            self.assertAlmostEqual(memory.rss_mib(), self.peak_mib(), delta=1.0)
