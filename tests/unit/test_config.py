"""Runtime configuration: defaults, settings, validation messages."""

from __future__ import annotations

from django.test import SimpleTestCase, override_settings

from robust_queue.processes.config import DispatcherConfig, SupervisorConfig, WorkerConfig
from robust_queue.processes.launch import build_config


class ConfigTests(SimpleTestCase):
    def test_defaults_mirror_solid_queue(self) -> None:
        config = SupervisorConfig.from_settings()
        self.assertEqual(
            config.workers,
            (WorkerConfig(queues=("*",), threads=3, processes=1, polling_interval=0.1),),
        )
        self.assertEqual(
            config.dispatchers, (DispatcherConfig(batch_size=500, polling_interval=1.0),)
        )
        self.assertEqual(
            (config.heartbeat_interval, config.alive_threshold, config.shutdown_timeout),
            (60.0, 300.0, 5.0),
        )
        self.assertEqual(config.mode, "fork")
        self.assertEqual(config.validate(), [])

    @override_settings(
        ROBUST_QUEUE={
            "workers": [{"queues": "mail*", "threads": 5}, {"queues": ["a", "b"], "processes": 2}],
            "dispatchers": [],
            "scheduler": False,
            "process_heartbeat_interval": 5,
            "process_alive_threshold": 20,
        }
    )
    def test_settings_are_read(self) -> None:
        config = SupervisorConfig.from_settings()
        self.assertEqual([w.queues for w in config.workers], [("mail*",), ("a", "b")])
        self.assertEqual([w.threads for w in config.workers], [5, 3])
        self.assertEqual(config.dispatchers, ())
        self.assertIsNone(config.scheduler)
        self.assertEqual(config.alive_threshold, 20.0)

    @override_settings(
        ROBUST_QUEUE={
            "workers": [{"threads": 0, "queues": ["a*b"]}],
            "dispatchers": [{"batch_size": -1}],
            "process_heartbeat_interval": 60,
            "process_alive_threshold": 30,
            "shutdown_timeout": -1,
            "mode": "spawn",
        }
    )
    def test_every_problem_is_named(self) -> None:
        errors = SupervisorConfig.from_settings().validate()
        for expected in (
            "WorkerConfig.threads must be > 0, not 0",
            "'*' may only end a name",
            "DispatcherConfig.batch_size must be > 0, not -1",
            "process_alive_threshold must be longer than process_heartbeat_interval",
            "shutdown_timeout must be >= 0",
            "mode must be one of fork, thread, not 'spawn'",
        ):
            with self.subTest(expected=expected):
                self.assertTrue(any(expected in e for e in errors), errors)

    @override_settings(ROBUST_QUEUE={"workers": [{"colour": "red"}]})
    def test_unknown_keys_are_a_type_error_naming_them(self) -> None:
        with self.assertRaisesMessage(TypeError, "colour"):
            SupervisorConfig.from_settings()

    def test_command_options_override_settings(self) -> None:
        config = build_config(
            {"queues": "a, b*", "threads": 7, "only_work": True, "mode": "thread"}
        )
        self.assertEqual(config.workers[0].queues, ("a", "b*"))
        self.assertEqual(config.workers[0].threads, 7)
        self.assertEqual((config.dispatchers, config.scheduler, config.mode), ((), None, "thread"))
        only_dispatch = build_config({"only_dispatch": True})
        self.assertEqual(only_dispatch.workers, ())
        self.assertEqual(len(only_dispatch.dispatchers), 1)

    @override_settings(ROBUST_QUEUE={"scheduler": {"polling_interval": 5, "catch_up": True}})
    def test_scheduler_catch_up_is_opt_in(self) -> None:
        self.assertIs(SupervisorConfig().scheduler.catch_up, False)
        scheduler = SupervisorConfig.from_settings().scheduler
        self.assertEqual((scheduler.polling_interval, scheduler.catch_up), (5.0, True))
