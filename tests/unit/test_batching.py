"""The batching helper (no database)."""

from __future__ import annotations

from django.test import SimpleTestCase

from robust_queue.batching import drain


class DrainTests(SimpleTestCase):
    def test_runs_until_a_batch_is_short_and_sums_the_batches(self) -> None:
        sizes = iter([3, 3, 1, 3])
        self.assertEqual(drain(lambda: next(sizes), 3), 7)
        self.assertEqual(next(sizes), 3, "the batch after the short one never ran")

    def test_a_last_full_batch_is_followed_by_an_empty_one(self) -> None:
        calls: list[int] = []
        sizes = iter([2, 2, 0])
        self.assertEqual(drain(lambda: calls.append(1) or next(sizes), 2), 4)
        self.assertEqual(len(calls), 3)
