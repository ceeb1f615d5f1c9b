"""The batching helper (no database)."""

from __future__ import annotations

from collections.abc import Iterator

from django.test import SimpleTestCase

from robust_queue.models.batching import LARGE, Progress, drain, each_batch


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


class EachBatchTests(SimpleTestCase):
    def test_yields_each_batch_and_stops_after_a_short_one(self) -> None:
        sizes = iter([3, 3, 1, 3])
        self.assertEqual(list(each_batch(lambda: next(sizes), 3)), [3, 3, 1])

    def test_runs_no_batch_before_it_is_asked_for(self) -> None:
        calls: list[int] = []
        steps = each_batch(lambda: calls.append(1) or 2, 2)
        self.assertEqual(calls, [])
        next(steps)
        self.assertEqual(calls, [1])


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class ProgressTests(SimpleTestCase):
    def setUp(self) -> None:
        self.clock = FakeClock()
        self.lines: list[str] = []

    def report(self, message: str, *args: object) -> None:
        self.lines.append(message % args)

    def progress(self, total: int | None, **kwargs: bool) -> Progress:
        return Progress("old rows", total, report=self.report, clock=self.clock, **kwargs)

    def batches(self, count: int, size: int = 1000, each: float = 1.0) -> Iterator[int]:
        for _ in range(count):
            self.clock.now += each
            yield size

    def test_a_large_pass_says_what_it_does_how_far_it_got_and_what_it_did(self) -> None:
        """Progress lines at most every 10 s, whatever the batch rate."""
        progress = self.progress(LARGE * 3)
        self.assertEqual(list(progress.track(self.batches(30))), [1000] * 30)
        self.assertEqual(
            self.lines,
            [
                f"Clearing {LARGE * 3} old rows, in batches",
                f"Clearing old rows: 10000 of {LARGE * 3} done (33%), 1000/s",
                f"Clearing old rows: 20000 of {LARGE * 3} done (67%), 1000/s",
                f"Clearing old rows: 30000 of {LARGE * 3} done (100%), 1000/s",
                "Cleared 30000 old rows in 30.0 s",
            ],
        )

    def test_a_small_pass_logs_its_summary_only(self) -> None:
        list(self.progress(5).track(iter([5])))
        self.assertEqual(self.lines, ["Cleared 5 old rows in 0.0 s"])

    def test_a_small_pass_without_summary_and_one_that_did_nothing_are_silent(self) -> None:
        list(self.progress(5, summary=False).track(iter([5])))
        list(self.progress(0).track(iter([0])))
        self.assertEqual(self.lines, [])

    def test_an_uncounted_pass_reports_once_it_turns_out_large(self) -> None:
        list(self.progress(None, summary=False).track(self.batches(20)))
        self.assertEqual(
            self.lines,
            [
                "Clearing old rows: 10000 so far, 1000/s",
                "Clearing old rows: 20000 so far, 1000/s",
                "Cleared 20000 old rows in 20.0 s",
            ],
        )

    def test_a_pass_counted_up_to_a_cap_says_there_may_be_more(self) -> None:
        list(self.progress(LARGE, more=True).track(self.batches(10)))
        self.assertEqual(
            self.lines,
            [
                f"Clearing more than {LARGE} old rows, in batches",
                "Clearing old rows: 10000 so far, 1000/s",
                "Cleared 10000 old rows in 10.0 s",
            ],
        )

    def test_a_pass_given_up_says_where_it_stopped(self) -> None:
        steps = self.progress(LARGE).track(self.batches(10))
        next(steps)
        steps.close()
        self.assertEqual(self.lines[-1], "Clearing old rows stopped after 1000 row(s)")
