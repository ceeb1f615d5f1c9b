"""Worker recycling and idle back-off settings: values, errors, back-off."""

from __future__ import annotations

from django.core.checks import run_checks
from django.test import SimpleTestCase, override_settings

from robust_queue.processes.backoff import IdleBackoff
from robust_queue.processes.config import SupervisorConfig, WorkerConfig


class RecyclingConfigTests(SimpleTestCase):
    def test_recycling_is_off_and_the_ceiling_two_seconds_by_default(self) -> None:
        worker = SupervisorConfig.from_settings().workers[0]
        self.assertEqual((worker.max_jobs, worker.max_memory), (None, None))
        self.assertEqual(worker.idle_polling_ceiling, 2.0)

    @override_settings(
        ROBUST_QUEUE={"workers": [{"max_jobs": 500, "max_memory": 512, "idle_polling_ceiling": 5}]}
    )
    def test_settings_are_read(self) -> None:
        worker = SupervisorConfig.from_settings().workers[0]
        self.assertEqual(
            (worker.max_jobs, worker.max_memory, worker.idle_polling_ceiling), (500, 512, 5)
        )
        self.assertEqual(SupervisorConfig.from_settings().validate(), [])

    def test_bad_limits_are_named(self) -> None:
        cases = {
            "max_jobs": (0, -3, 2.5, True, "100"),
            "max_memory": (0, -1, "1G", False),
        }
        for name, values in cases.items():
            for value in values:
                with self.subTest(name=name, value=value):
                    errors = WorkerConfig(**{name: value}).validate()
                    self.assertEqual(len(errors), 1, errors)
                    self.assertIn(f"WorkerConfig.{name} must be", errors[0])
                    self.assertIn(f"not {value!r}", errors[0])

    @override_settings(ROBUST_QUEUE={"workers": [{"queues": ["a"]}, {"listen": False}]})
    def test_the_listener_is_on_unless_a_worker_says_false(self) -> None:
        first, second = SupervisorConfig.from_settings().workers
        self.assertEqual((first.listen, second.listen), (True, False))
        for value in ("no", 0, None):
            with self.subTest(value=value):
                self.assertEqual(
                    WorkerConfig(listen=value).validate(),  # type: ignore[arg-type]
                    [f"WorkerConfig.listen must be True or False, not {value!r}"],
                )

    @override_settings(ROBUST_QUEUE={"workers": [{"listen": "off"}]})
    def test_the_system_check_reports_a_listen_that_is_not_a_bool(self) -> None:
        messages = [m.msg for m in run_checks(tags=["robust_queue"]) if m.id == "robust_queue.E023"]
        self.assertEqual(messages, ["WorkerConfig.listen must be True or False, not 'off'"])

    def test_the_ceiling_is_positive(self) -> None:
        self.assertIn(
            "WorkerConfig.idle_polling_ceiling must be > 0, not 0",
            WorkerConfig(idle_polling_ceiling=0).validate(),
        )

    def test_a_polling_interval_above_the_ceiling_is_valid(self) -> None:
        """A slow fixed pace (5 s) stays a valid setting: no back-off then."""
        self.assertEqual(WorkerConfig(polling_interval=5).validate(), [])

    def test_max_memory_needs_fork_mode(self) -> None:
        config = SupervisorConfig(mode="thread", workers=(WorkerConfig(max_memory=100),))
        self.assertTrue(any("max_memory needs mode 'fork'" in e for e in config.validate()))
        # max_jobs works in both modes.
        config = SupervisorConfig(mode="thread", workers=(WorkerConfig(max_jobs=10),))
        self.assertEqual(config.validate(), [])

    @override_settings(ROBUST_QUEUE={"workers": [{"max_jobs": -1}]})
    def test_the_system_check_reports_a_bad_limit(self) -> None:
        messages = [m for m in run_checks(tags=["robust_queue"]) if m.id == "robust_queue.E023"]
        self.assertTrue(any("WorkerConfig.max_jobs must be" in m.msg for m in messages), messages)


class IdleBackoffTests(SimpleTestCase):
    def test_pauses_double_up_to_the_ceiling(self) -> None:
        backoff = IdleBackoff(0.1, 2.0)
        pauses = [backoff.next_pause() for _ in range(8)]
        self.assertEqual(pauses, [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0, 2.0])

    def test_reset_starts_again_at_the_polling_interval(self) -> None:
        backoff = IdleBackoff(0.1, 2.0)
        for _ in range(10):
            backoff.next_pause()
        backoff.reset()
        self.assertEqual(backoff.next_pause(), 0.1)

    def test_a_ceiling_below_the_base_is_the_base(self) -> None:
        self.assertEqual(IdleBackoff(1.0, 0.5).next_pause(), 1.0)
