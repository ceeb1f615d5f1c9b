"""The edges of the runtime configuration: malformed role lists, selectors,
numbers that are not numbers, and the checks that report them (no
database)."""

from __future__ import annotations

from datetime import timedelta

from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import SimpleTestCase, override_settings

from robust_queue.checks import check_settings
from robust_queue.exceptions import ConfigurationError
from robust_queue.processes.config import (
    DispatcherConfig,
    SchedulerConfig,
    SupervisorConfig,
    WorkerConfig,
)


def errors(**settings: object) -> list[str]:
    with override_settings(ROBUST_QUEUE=settings):
        return SupervisorConfig.from_settings().validate()


class RoleListTests(SimpleTestCase):
    @override_settings(ROBUST_QUEUE={"workers": {"queues": ["*"]}})
    def test_a_role_entry_instead_of_a_list_is_a_type_error(self) -> None:
        with self.assertRaisesMessage(TypeError, "ROBUST_QUEUE WorkerConfig list expected"):
            SupervisorConfig.from_settings()

    @override_settings(ROBUST_QUEUE={"workers": None, "dispatchers": None})
    def test_none_is_one_role_with_the_defaults(self) -> None:
        config = SupervisorConfig.from_settings()
        self.assertEqual(
            (config.workers, config.dispatchers), ((WorkerConfig(),), (DispatcherConfig(),))
        )

    @override_settings(ROBUST_QUEUE={"workers": [], "dispatchers": []})
    def test_an_empty_list_is_no_role(self) -> None:
        config = SupervisorConfig.from_settings()
        self.assertEqual((config.workers, config.dispatchers), ((), ()))
        self.assertEqual(config.validate(), [])

    def test_the_scheduler_entry(self) -> None:
        for given, expected in (
            (False, None),
            (None, None),
            ({}, SchedulerConfig()),
            (True, SchedulerConfig()),
            ({"polling_interval": 5}, SchedulerConfig(polling_interval=5)),
        ):
            with self.subTest(given=given), override_settings(ROBUST_QUEUE={"scheduler": given}):
                self.assertEqual(SupervisorConfig.from_settings().scheduler, expected)

    @override_settings(ROBUST_QUEUE={"dispatchers": [{"batch": 5}]})
    def test_an_unknown_role_key_names_the_role_and_the_key(self) -> None:
        with self.assertRaisesMessage(TypeError, "ROBUST_QUEUE DispatcherConfig"):
            SupervisorConfig.from_settings()


class SelectorTests(SimpleTestCase):
    def selector_errors(self, *queues: str) -> list[str]:
        return WorkerConfig(queues=queues).validate()

    def test_valid_selectors(self) -> None:
        self.assertEqual(self.selector_errors("*"), [])
        self.assertEqual(self.selector_errors("mail*", "default", "a.b-c_d"), [])

    def test_a_star_only_ends_a_name(self) -> None:
        self.assertIn("'*' may only end a name", self.selector_errors("a*b")[0])
        self.assertIn("'*' may only end a name", self.selector_errors("**")[0])

    def test_a_selector_is_a_queue_name_or_its_prefix(self) -> None:
        [error] = self.selector_errors("mail box*")
        self.assertIn("worker queue selector 'mail box*': a queue name is", error)

    def test_no_selector_or_an_empty_one_is_an_error(self) -> None:
        self.assertIn(
            "worker queues must be non-empty names", WorkerConfig(queues=()).validate()[0]
        )
        self.assertIn("worker queues must be non-empty names", self.selector_errors("")[0])

    def test_a_string_is_one_selector(self) -> None:
        with override_settings(ROBUST_QUEUE={"workers": [{"queues": "mail*"}]}):
            self.assertEqual(SupervisorConfig.from_settings().workers[0].queues, ("mail*",))


class NumberTests(SimpleTestCase):
    def test_booleans_are_not_numbers(self) -> None:
        self.assertIn(
            "WorkerConfig.threads must be > 0, not True", WorkerConfig(threads=True).validate()
        )

    def test_strings_are_not_numbers(self) -> None:
        problems = DispatcherConfig(batch_size="500").validate()  # type: ignore[arg-type]
        self.assertEqual(problems, ["DispatcherConfig.batch_size must be > 0, not '500'"])

    def test_a_zero_shutdown_timeout_is_valid_a_negative_one_is_not(self) -> None:
        self.assertEqual(SupervisorConfig(shutdown_timeout=0).validate(), [])
        self.assertIn(
            "shutdown_timeout must be >= 0, not -0.5",
            SupervisorConfig(shutdown_timeout=-0.5).validate(),
        )

    def test_the_alive_threshold_must_exceed_the_heartbeat(self) -> None:
        same = SupervisorConfig(heartbeat_interval=60, alive_threshold=60).validate()
        self.assertTrue(any("longer than process_heartbeat_interval" in e for e in same))
        self.assertEqual(SupervisorConfig(heartbeat_interval=60, alive_threshold=61).validate(), [])

    def test_the_maintenance_budget_is_positive_and_within_a_heartbeat(self) -> None:
        """A slice of retention longer than a heartbeat interval would
        make the supervisor's own heartbeat late."""
        self.assertEqual(
            SupervisorConfig(maintenance_budget=0).validate(),
            ["SupervisorConfig.maintenance_budget must be > 0, not 0"],
        )
        too_long = SupervisorConfig(heartbeat_interval=1, maintenance_budget=2).validate()
        self.assertEqual(len(too_long), 1)
        self.assertIn("maintenance_budget must not be longer than", too_long[0])
        self.assertEqual(
            SupervisorConfig(heartbeat_interval=1, maintenance_budget=1).validate(), []
        )

    def test_every_role_is_validated(self) -> None:
        config = SupervisorConfig(
            workers=(WorkerConfig(threads=0), WorkerConfig(processes=0)),
            dispatchers=(DispatcherConfig(concurrency_maintenance_interval=0),),
            scheduler=SchedulerConfig(polling_interval=-1),
        )
        self.assertEqual(
            config.validate(),
            [
                "WorkerConfig.threads must be > 0, not 0",
                "WorkerConfig.processes must be > 0, not 0",
                "DispatcherConfig.concurrency_maintenance_interval must be > 0, not 0",
                "SchedulerConfig.polling_interval must be > 0, not -1",
            ],
        )

    def test_intervals_and_timeouts_take_a_timedelta(self) -> None:
        settings = {
            "process_heartbeat_interval": timedelta(seconds=30),
            "process_alive_threshold": timedelta(minutes=2),
            "shutdown_timeout": timedelta(seconds=25),
            "maintenance_interval": timedelta(minutes=5),
        }
        with override_settings(ROBUST_QUEUE=settings):
            config = SupervisorConfig.from_settings()
        self.assertEqual(
            (
                config.heartbeat_interval,
                config.alive_threshold,
                config.shutdown_timeout,
                config.maintenance_interval,
            ),
            (30.0, 120.0, 25.0, 300.0),
        )

    @override_settings(ROBUST_QUEUE={"shutdown_timeout": "5s"})
    def test_a_value_that_is_no_duration_names_its_key(self) -> None:
        with self.assertRaisesMessage(
            ConfigurationError,
            "ROBUST_QUEUE[\"shutdown_timeout\"] must be a number of seconds or a timedelta, not '5s'.",
        ):
            SupervisorConfig.from_settings()


class RoleSplitTests(SimpleTestCase):
    def test_only_work_keeps_the_workers(self) -> None:
        config = SupervisorConfig().only("work")
        self.assertEqual((len(config.workers), config.dispatchers, config.scheduler), (1, (), None))

    def test_only_dispatch_keeps_the_dispatchers_and_the_scheduler(self) -> None:
        config = SupervisorConfig().only("dispatch")
        self.assertEqual(config.workers, ())
        self.assertEqual(len(config.dispatchers), 1)
        self.assertEqual(config.scheduler, SchedulerConfig())


class ValueCheckTests(SimpleTestCase):
    databases = {"default", "queue"}

    @override_settings(ROBUST_QUEUE={"shutdown_timeout": "5s", "colour": "red"})
    def test_a_bad_value_is_e023_beside_unknown_keys(self) -> None:
        messages = check_settings()
        self.assertEqual(
            [(m.id, m.msg) for m in messages],
            [
                ("robust_queue.E020", "ROBUST_QUEUE has unknown key 'colour': it is ignored."),
                (
                    "robust_queue.E023",
                    'ROBUST_QUEUE["shutdown_timeout"] must be a number of '
                    "seconds or a timedelta, not '5s'.",
                ),
            ],
        )

    @override_settings(ROBUST_QUEUE={"task_modules": "testproject.tasks"})
    def test_checks_that_read_a_bad_value_do_not_run_after_it(self) -> None:
        """A bad task_modules would make discovery raise: it is reported,
        and discovery is not tried."""
        [message] = check_settings()
        self.assertEqual(message.id, "robust_queue.E023")
        self.assertIn('ROBUST_QUEUE["task_modules"] must be a list', message.msg)

    @override_settings(ROBUST_QUEUE={"maintenance_interval": [60]})
    def test_the_command_refuses_to_start_on_a_bad_value(self) -> None:
        with self.assertRaisesMessage(
            CommandError, 'Invalid ROBUST_QUEUE settings: ROBUST_QUEUE["maintenance_interval"]'
        ):
            call_command("robust_queue", "--check", skip_checks=True)
