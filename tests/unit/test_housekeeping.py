"""The supervisor's housekeeping runs a pass a slice per tick (no database)."""

from __future__ import annotations

from collections.abc import Iterator

from django.test import SimpleTestCase

from robust_queue.processes.housekeeping import Budget, Housekeeping


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class BudgetTests(SimpleTestCase):
    def test_is_spent_once_its_seconds_have_passed(self) -> None:
        clock = FakeClock()
        budget = Budget(0.5, clock)
        clock.now += 0.4
        self.assertIs(budget.spent(), False)
        clock.now += 0.1
        self.assertIs(budget.spent(), True)


class HousekeepingTests(SimpleTestCase):
    def setUp(self) -> None:
        self.clock = FakeClock()
        self.steps: list[int] = []
        self.passes = 0

    def a_pass(self, steps: int = 10, each: float = 0.2) -> Iterator[int]:
        """A pass whose every step takes ``each`` s of the fake clock."""
        self.passes += 1
        for step in range(steps):
            self.clock.now += each
            self.steps.append(step)
            yield step

    def housekeeping(self, **kwargs: float) -> Housekeeping:
        return Housekeeping(
            lambda: self.a_pass(**kwargs), interval=60, budget=0.5, clock=self.clock
        )

    def test_a_pass_starts_once_the_interval_has_passed(self) -> None:
        housekeeping = self.housekeeping()
        self.assertIs(housekeeping.run(), False)
        self.assertEqual(self.passes, 0)
        self.clock.now += 60
        self.assertIs(housekeeping.run(), True)
        self.assertEqual(self.passes, 1)

    def test_each_run_stops_after_the_step_that_spends_the_budget(self) -> None:
        """0.2 s steps and a 0.5 s budget: three steps per run, and the
        next run resumes where the last one stopped."""
        housekeeping = self.housekeeping()
        self.clock.now += 60
        self.assertIs(housekeeping.run(), True)
        self.assertEqual(self.steps, [0, 1, 2])
        self.assertIs(housekeeping.running, True)
        housekeeping.run()
        self.assertEqual(self.steps, [0, 1, 2, 3, 4, 5])

    def test_a_pass_ends_whatever_the_budget(self) -> None:
        """A step longer than the budget still runs, one per run; the run
        after the last step finds the pass ended."""
        housekeeping = self.housekeeping(steps=2, each=5.0)
        self.clock.now += 60
        self.assertIs(housekeeping.run(), True)
        self.assertEqual(self.steps, [0])
        self.assertIs(housekeeping.run(), True)
        self.assertEqual(self.steps, [0, 1])
        self.assertIs(housekeeping.run(), False)
        self.assertIs(housekeeping.running, False)

    def test_an_interruption_ends_the_run_after_one_step(self) -> None:
        housekeeping = self.housekeeping()
        self.clock.now += 60
        self.assertIs(housekeeping.run(interrupted=lambda: True), True)
        self.assertEqual(self.steps, [0])

    def test_the_next_pass_starts_an_interval_after_the_last_one_started(self) -> None:
        housekeeping = self.housekeeping(steps=3, each=10.0)
        self.clock.now += 60
        while housekeeping.run():
            pass
        self.assertEqual(self.passes, 1)
        self.clock.now += 29
        self.assertIs(housekeeping.run(), False)
        self.assertEqual(self.passes, 1, "30 s after the start: not due")
        self.clock.now += 1
        housekeeping.run()
        self.assertEqual(self.passes, 2)

    def test_a_pass_that_raises_is_dropped(self) -> None:
        def failing() -> Iterator[int]:
            yield 1
            raise RuntimeError("boom")

        housekeeping = Housekeeping(failing, interval=60, budget=10, clock=self.clock)
        self.clock.now += 60
        with self.assertRaisesMessage(RuntimeError, "boom"):
            housekeeping.run()
        self.assertIs(housekeeping.running, False)
        self.assertIs(housekeeping.run(), False, "the next pass waits for the interval")

    def test_stop_closes_the_pass(self) -> None:
        closed: list[bool] = []

        def endless() -> Iterator[int]:
            try:
                while True:
                    yield 1
            except GeneratorExit:
                closed.append(True)
                raise

        housekeeping = Housekeeping(endless, interval=0, budget=0, clock=self.clock)
        housekeeping.run()
        housekeeping.stop()
        self.assertEqual(closed, [True])
        self.assertIs(housekeeping.running, False)
        housekeeping.stop()
