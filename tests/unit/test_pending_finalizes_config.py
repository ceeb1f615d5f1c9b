"""max_pending_finalizes: how many unwritten outcomes a worker holds before
it stops claiming."""

from __future__ import annotations

from django.core.checks import run_checks
from django.test import SimpleTestCase, override_settings

from robust_queue.processes.config import SupervisorConfig, WorkerConfig


class PendingFinalizesConfigTests(SimpleTestCase):
    def test_ten_by_default(self) -> None:
        self.assertEqual(SupervisorConfig.from_settings().workers[0].max_pending_finalizes, 10)

    @override_settings(ROBUST_QUEUE={"workers": [{"max_pending_finalizes": 3}]})
    def test_the_setting_is_read(self) -> None:
        self.assertEqual(SupervisorConfig.from_settings().workers[0].max_pending_finalizes, 3)
        self.assertEqual(SupervisorConfig.from_settings().validate(), [])

    def test_a_bound_that_is_not_a_whole_number_over_zero_is_named(self) -> None:
        for value in (0, -1, 2.5, True, "10", None):
            with self.subTest(value=value):
                self.assertEqual(
                    WorkerConfig(max_pending_finalizes=value).validate(),  # type: ignore[arg-type]
                    [
                        "WorkerConfig.max_pending_finalizes must be a whole number > 0, "
                        f"not {value!r}"
                    ],
                )

    @override_settings(ROBUST_QUEUE={"workers": [{"max_pending_finalizes": 0}]})
    def test_the_system_check_reports_a_bad_bound(self) -> None:
        messages = [m.msg for m in run_checks(tags=["robust_queue"]) if m.id == "robust_queue.E023"]
        self.assertEqual(
            messages, ["WorkerConfig.max_pending_finalizes must be a whole number > 0, not 0"]
        )
