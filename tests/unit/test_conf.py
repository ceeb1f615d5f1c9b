"""conf.KEYS: every ROBUST_QUEUE key with its default and conversion, read
only through ``conf.get``."""

from __future__ import annotations

import ast
from datetime import timedelta
from pathlib import Path

from django.test import SimpleTestCase, override_settings

from robust_queue import conf
from robust_queue.exceptions import ConfigurationError
from robust_queue.processes.config import SupervisorConfig

PACKAGE = Path(conf.__file__).resolve().parent
# Reading ROBUST_QUEUE other than through conf.get: each has its own default.
DIRECT_READERS = {"setting", "robust_queue_settings"}


def settings_reads(source: str) -> list[str]:
    """Every place in ``source`` that reads ``ROBUST_QUEUE`` itself."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "ROBUST_QUEUE":
            found.append(f"line {node.lineno}: .ROBUST_QUEUE")
        elif isinstance(node, ast.Constant) and node.value == "ROBUST_QUEUE":
            found.append(f"line {node.lineno}: 'ROBUST_QUEUE'")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in DIRECT_READERS:
                found.append(f"line {node.lineno}: {name}()")
    return found


def key_constants_used(source: str) -> set[str]:
    """Names of ``conf`` Key constants that ``source`` reads (``conf.X``)."""
    names = {name for name, key in vars(conf).items() if isinstance(key, conf.Key)}
    return {
        node.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "conf"
        and node.attr in names
    }


def package_sources() -> dict[Path, str]:
    return {path: path.read_text() for path in PACKAGE.rglob("*.py")}


class ReadThroughTheTableTests(SimpleTestCase):
    def test_the_scan_finds_each_form_of_direct_read(self) -> None:
        """The scan itself works: each way around the table is found."""
        source = (
            'a = conf.setting("time_limit", 1.0)\n'
            'b = getattr(settings, "ROBUST_QUEUE", {}).get("mode", "fork")\n'
            'c = settings.ROBUST_QUEUE["shutdown_timeout"]\n'
            'd = conf.robust_queue_settings().get("maintenance_interval", 60)\n'
            "e = setting('hooks', {})\n"
        )
        self.assertEqual(
            sorted(place.split(":")[0] for place in settings_reads(source)),
            ["line 1", "line 2", "line 3", "line 4", "line 5"],
        )
        self.assertEqual(settings_reads("x = conf.get(conf.MODE)\n"), [])

    def test_nothing_outside_conf_reads_the_setting_itself(self) -> None:
        """A module with its own default for a key cannot exist: the only
        way to a value is ``conf.get``, which applies the table's."""
        offenders = {
            str(path.relative_to(PACKAGE)): reads
            for path, source in package_sources().items()
            if path.name != "conf.py" and (reads := settings_reads(source))
        }
        self.assertEqual(offenders, {})

    def test_every_key_of_the_table_is_read_somewhere(self) -> None:
        """No key is dead: each constant is read outside its definition."""
        used: set[str] = set()
        for path, source in package_sources().items():
            if path.name != "conf.py":
                used |= key_constants_used(source)
        # conf.py's own reads: get(DATABASE) in queue_database(), ...
        conf_tree = ast.parse((PACKAGE / "conf.py").read_text())
        used |= {
            node.args[0].id
            for node in ast.walk(conf_tree)
            if isinstance(node, ast.Call)
            and getattr(node.func, "id", "") == "get"
            and node.args
            and isinstance(node.args[0], ast.Name)
        }
        declared = {name for name, key in vars(conf).items() if isinstance(key, conf.Key)}
        self.assertGreater(len(declared), 25)
        self.assertEqual(sorted(declared - used), [])

    def test_the_table_is_keyed_by_each_key_s_own_name(self) -> None:
        declared = [key for key in vars(conf).values() if isinstance(key, conf.Key)]
        self.assertEqual(sorted(conf.KEYS), sorted(key.name for key in declared))
        for name, key in conf.KEYS.items():
            self.assertEqual(key.name, name)


class DefaultsTests(SimpleTestCase):
    def test_every_default_is_a_value_its_conversion_keeps(self) -> None:
        """Writing a default out in settings gives the default back."""
        for name, key in conf.KEYS.items():
            with self.subTest(key=name):
                self.assertEqual(key.convert(key.default), key.default)

    def test_writing_every_default_out_changes_nothing(self) -> None:
        defaults = SupervisorConfig.from_settings()
        written = {name: key.default for name, key in conf.KEYS.items()}
        with override_settings(ROBUST_QUEUE=written):
            self.assertEqual(SupervisorConfig.from_settings(), defaults)
            self.assertEqual(conf.invalid_values(), [])
            for key in conf.KEYS.values():
                self.assertEqual(conf.get(key), key.default)

    @override_settings(ROBUST_QUEUE={})
    def test_an_unset_key_reads_as_its_default(self) -> None:
        self.assertEqual(conf.get(conf.PROCESS_ALIVE_THRESHOLD), 300.0)
        self.assertEqual(conf.get(conf.CLEAR_FINISHED_JOBS_AFTER), timedelta(days=1))
        self.assertIsNone(conf.get(conf.CLEAR_FAILED_JOBS_AFTER))
        self.assertIs(conf.preserve_finished_jobs(), True)
        self.assertEqual(conf.queue_database(), "default")

    @override_settings(ROBUST_QUEUE=None)
    def test_no_setting_at_all_reads_as_the_defaults(self) -> None:
        self.assertEqual(conf.get(conf.SHUTDOWN_TIMEOUT), 5.0)
        self.assertEqual(conf.invalid_values(), [])
        self.assertEqual(conf.unknown_keys(), [])

    def test_the_supervisor_config_defaults_are_the_table_s(self) -> None:
        config = SupervisorConfig()
        self.assertEqual(config.heartbeat_interval, conf.PROCESS_HEARTBEAT_INTERVAL.default)
        self.assertEqual(config.alive_threshold, conf.PROCESS_ALIVE_THRESHOLD.default)
        self.assertEqual(config.shutdown_timeout, conf.SHUTDOWN_TIMEOUT.default)
        self.assertEqual(config.maintenance_interval, conf.MAINTENANCE_INTERVAL.default)
        self.assertEqual(config.mode, conf.MODE.default)


class CachedTests(SimpleTestCase):
    def test_a_cached_key_is_read_again_after_a_change_of_settings(self) -> None:
        """``cached`` keeps a value until ``override_settings`` changes it,
        and raises, keeping nothing, for a value that does not convert."""
        with override_settings(ROBUST_QUEUE={}):
            self.assertIsNone(conf.cached(conf.JOB_LOG))
            with override_settings(ROBUST_QUEUE={"job_log": "ERROR"}):
                self.assertEqual(conf.cached(conf.JOB_LOG), 40)
            self.assertIsNone(conf.cached(conf.JOB_LOG))
            with override_settings(ROBUST_QUEUE={"job_log": "LOUD"}):
                for _ in range(2):
                    with self.assertRaisesMessage(ConfigurationError, 'ROBUST_QUEUE["job_log"]'):
                        conf.cached(conf.JOB_LOG)


class ConversionTests(SimpleTestCase):
    @override_settings(
        ROBUST_QUEUE={
            "process_alive_threshold": timedelta(minutes=2),
            "clear_finished_jobs_after": 3600,
            "clear_failed_jobs_after": timedelta(days=30),
            "statistics_flush_interval": 2,
            "task_modules": ["a.tasks", "b.tasks"],
            "argument_models": ["Shop.Order"],
        }
    )
    def test_a_set_value_is_converted(self) -> None:
        self.assertEqual(conf.get(conf.PROCESS_ALIVE_THRESHOLD), 120.0)
        self.assertEqual(conf.get(conf.CLEAR_FINISHED_JOBS_AFTER), timedelta(hours=1))
        self.assertEqual(conf.get(conf.CLEAR_FAILED_JOBS_AFTER), timedelta(days=30))
        self.assertEqual(conf.get(conf.STATISTICS_FLUSH_INTERVAL), 2.0)
        self.assertEqual(conf.get(conf.TASK_MODULES), ("a.tasks", "b.tasks"))
        self.assertEqual(conf.get(conf.ARGUMENT_MODELS), frozenset({"shop.order"}))

    @override_settings(ROBUST_QUEUE={"shutdown_timeout": "soon"})
    def test_a_value_that_does_not_convert_is_an_error_naming_the_key(self) -> None:
        with self.assertRaisesMessage(
            ConfigurationError,
            'ROBUST_QUEUE["shutdown_timeout"] must be a number of seconds or a '
            "timedelta, not 'soon'.",
        ):
            conf.get(conf.SHUTDOWN_TIMEOUT)

    @override_settings(
        ROBUST_QUEUE={
            "preserve_finished_jobs": "no",
            "mode": 3,
            "clear_finished_jobs_after": -5,
            "statistics_retention": 0,
            "task_modules": "shop.tasks",
            "argument_models": ["order"],
            "metrics_token": "short",
            "process_heartbeat_interval": True,
            "database": "",
            "workers": "ignored here: WorkerConfig validates entries",
        }
    )
    def test_every_bad_value_is_listed_with_its_key(self) -> None:
        self.assertEqual(
            conf.invalid_values(),
            [
                "ROBUST_QUEUE[\"preserve_finished_jobs\"] must be True or False, not 'no'.",
                'ROBUST_QUEUE["mode"] must be a non-empty string, not 3.',
                'ROBUST_QUEUE["clear_finished_jobs_after"] must be 0 seconds or more, not -5.',
                'ROBUST_QUEUE["statistics_retention"] must be more than 0 seconds, not 0.',
                'ROBUST_QUEUE["task_modules"] must be a list of non-empty strings, not '
                "'shop.tasks'.",
                'ROBUST_QUEUE["argument_models"] must be a list of model labels such as '
                "\"shop.order\", not ['order'].",
                'ROBUST_QUEUE["metrics_token"] must be None or a string of at least 16 '
                "characters, not 'short'.",
                'ROBUST_QUEUE["process_heartbeat_interval"] must be a number of seconds '
                "or a timedelta, not True.",
                "ROBUST_QUEUE[\"database\"] must be a non-empty string, not ''.",
            ],
        )

    @override_settings(ROBUST_QUEUE={"clear_recurring_executions_after": 10**20})
    def test_a_duration_too_long_for_python_is_an_error_not_a_crash(self) -> None:
        with self.assertRaisesMessage(ConfigurationError, "must be a duration Python can hold"):
            conf.get(conf.CLEAR_RECURRING_EXECUTIONS_AFTER)

    @override_settings(ROBUST_QUEUE={"time_limit": None, "clear_failed_jobs_after": None})
    def test_none_turns_an_optional_key_off(self) -> None:
        self.assertIsNone(conf.get(conf.TIME_LIMIT))
        self.assertIsNone(conf.get(conf.CLEAR_FAILED_JOBS_AFTER))
        self.assertEqual(conf.invalid_values(), [])

    @override_settings(ROBUST_QUEUE={"statistics_retention": None})
    def test_none_is_refused_where_the_key_has_no_off(self) -> None:
        self.assertEqual(
            conf.invalid_values(),
            [
                'ROBUST_QUEUE["statistics_retention"] must be a number of seconds or a '
                "timedelta, not None.",
            ],
        )


class UnknownKeyTests(SimpleTestCase):
    @override_settings(ROBUST_QUEUE={"worker": [], "workers": [], "colour": "red"})
    def test_unknown_keys_are_listed(self) -> None:
        self.assertEqual(conf.unknown_keys(), ["colour", "worker"])

    @override_settings(ROBUST_QUEUE={"colour": "red"})
    def test_an_unknown_key_is_not_a_bad_value(self) -> None:
        """It is reported once, as unknown (check robust_queue.E020)."""
        self.assertEqual(conf.invalid_values(), [])
