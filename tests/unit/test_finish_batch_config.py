"""finish_batch and finish_window: how many successes a worker writes
together, and how long it waits for more."""

from __future__ import annotations

from django.core.checks import run_checks
from django.test import SimpleTestCase, override_settings

from robust_queue.processes.config import SupervisorConfig, WorkerConfig


class FinishBatchConfigTests(SimpleTestCase):
    def test_on_by_default(self) -> None:
        worker = SupervisorConfig.from_settings().workers[0]
        self.assertEqual((worker.finish_batch, worker.finish_window), (10, 0.002))

    @override_settings(ROBUST_QUEUE={"workers": [{"finish_batch": 6, "finish_window": 0.01}]})
    def test_the_settings_are_read(self) -> None:
        worker = SupervisorConfig.from_settings().workers[0]
        self.assertEqual((worker.finish_batch, worker.finish_window), (6, 0.01))
        self.assertEqual(SupervisorConfig.from_settings().validate(), [])

    def test_a_batch_that_is_not_a_whole_number_over_zero_is_named(self) -> None:
        for value in (0, -2, 2.5, True, "3", None):
            with self.subTest(value=value):
                self.assertEqual(
                    WorkerConfig(finish_batch=value).validate(),  # type: ignore[arg-type]
                    [f"WorkerConfig.finish_batch must be a whole number > 0, not {value!r}"],
                )

    def test_a_window_that_is_not_over_zero_is_named(self) -> None:
        for value in (0, -0.5, "1", None):
            with self.subTest(value=value):
                self.assertEqual(
                    WorkerConfig(finish_window=value).validate(),  # type: ignore[arg-type]
                    [f"WorkerConfig.finish_window must be > 0, not {value!r}"],
                )

    @override_settings(ROBUST_QUEUE={"workers": [{"finish_batch": 0}]})
    def test_the_system_check_reports_a_bad_batch(self) -> None:
        messages = [m.msg for m in run_checks(tags=["robust_queue"]) if m.id == "robust_queue.E023"]
        self.assertEqual(messages, ["WorkerConfig.finish_batch must be a whole number > 0, not 0"])
