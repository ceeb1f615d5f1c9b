"""One INFO line per attempt start and end, with fields for formatters."""

from __future__ import annotations

from django.test import TransactionTestCase

from robust_queue.running.performing import perform
from testproject import control_tasks, tasks
from tests.helpers import claim, make_process

FIELDS = ("result_id", "task", "queue", "attempt", "worker", "wait_ms")


class AttemptLogTests(TransactionTestCase):
    def run_one(self) -> list:  # type: ignore[type-arg]
        with self.assertLogs("robust_queue.jobs", "INFO") as logs:
            [claimed] = claim(process=make_process(), worker_id="w-1")
            perform(claimed)
        return logs.records

    def test_success_logs_start_and_end_with_fields(self) -> None:
        result = tasks.add.enqueue(1, 2)
        start, end = self.run_one()
        for record in (start, end):
            self.assertEqual(
                {name: getattr(record, name) for name in FIELDS[:5]},
                {
                    "result_id": result.id,
                    "task": "testproject.tasks.add",
                    "queue": "default",
                    "attempt": 1,
                    "worker": "w-1",
                },
            )
            self.assertGreaterEqual(record.wait_ms, 0)
        self.assertIn(f"Job {result.id} started", start.getMessage())
        self.assertEqual(end.outcome, "successful")
        self.assertGreaterEqual(end.run_ms, 0)
        self.assertFalse(hasattr(start, "outcome"))

    def test_a_failure_that_is_retried(self) -> None:
        control_tasks.flaky.enqueue("k", succeed_on=2)
        self.assertEqual(self.run_one()[-1].outcome, "retried")

    def test_a_final_failure(self) -> None:
        tasks.fail.enqueue()
        self.assertEqual(self.run_one()[-1].outcome, "failed")

    def test_a_failure_names_its_exception_and_message_masked(self) -> None:
        """Whatever the Tasks framework logs (Django 6.x logs no failure
        through a handler by default), the end's line says what was raised."""
        result = tasks.fail.enqueue("upstream refused: password=hunter22")
        end = self.run_one()[-1]
        self.assertEqual(end.error, "ValueError: upstream refused: password=********")
        self.assertTrue(
            end.getMessage().endswith(": ValueError: upstream refused: password=********"),
            end.getMessage(),
        )
        self.assertIn(f"Job {result.id} failed", end.getMessage())
        self.assertNotIn("hunter22", end.getMessage())

    def test_a_long_message_is_cut_after_masking(self) -> None:
        tasks.fail.enqueue("token=" + "s" * 40 + " " + "m" * 2_000)
        error = self.run_one()[-1].error
        self.assertTrue(error.startswith("ValueError: token=******** mmm"), error[:80])
        self.assertTrue(error.endswith("…"))
        self.assertNotIn("sss", error)

    def test_a_success_has_no_error_field(self) -> None:
        tasks.add.enqueue(1, 2)
        self.assertFalse(hasattr(self.run_one()[-1], "error"))

    def test_a_second_attempt_counts(self) -> None:
        control_tasks.flaky.enqueue("k", succeed_on=2)
        self.run_one()
        start, end = self.run_one()
        self.assertEqual((start.attempt, end.attempt, end.outcome), (2, 2, "successful"))
