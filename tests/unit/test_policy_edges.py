"""Edges of the policy modules (no database): retry back-off limits, unique
and rate-limit keys, the ``@task(...)`` dict forms, queue names and
priorities, time limits, per-task retention, recurring definitions from
settings, and which database a backend's queue lives in."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta

from django.test import SimpleTestCase, override_settings

from robust_queue import conf
from robust_queue.arguments import encode_arguments
from robust_queue.compat import FRAMEWORK, InvalidTask, task
from robust_queue.exceptions import ConfigurationError, EnqueueError, RetryPolicyError
from robust_queue.options import recurrence, task_retention, time_limits
from robust_queue.options.rate_limits import KEY_MAX_LENGTH, RATE_LIMIT, Rate
from robust_queue.options.recurrence import RecurringDefinition
from robust_queue.options.retries import RETRY, RetryPolicy
from robust_queue.options.task_retention import GLOBAL, RETAIN, TaskRetention
from robust_queue.options.time_limits import TIME_LIMIT
from robust_queue.options.unique_claims import LABEL_MAX_LENGTH, claim_for
from robust_queue.options.uniqueness import STATES, UNIQUE, Uniqueness, unique
from robust_queue.options.validation import check_priority, queue_name_error
from testproject import tasks
from testproject.models import LedgerEntry


def _sample(a: object = None, b: object = None) -> None:
    """A function of this module to declare tasks from."""


SAMPLE = task()(_sample)
NOW = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)


def claim_hash(declared: object, *args: object, **kwargs: object) -> str:
    arguments = encode_arguments(args, kwargs)
    claim = claim_for(declared, args, kwargs, arguments)  # type: ignore[arg-type]
    assert claim is not None
    return claim.key_hash


class RetryPolicyEdgeTests(SimpleTestCase):
    def test_every_problem_is_named_in_one_error(self) -> None:
        with self.assertRaises(ConfigurationError) as raised:
            RETRY.build(0, backoff="linear", jitter=-1)  # type: ignore[arg-type]
        message = str(raised.exception)
        self.assertTrue(message.startswith("retry(): "), message)
        for part in (
            "'attempts' must be at least 1 (the first run counts), not 0.",
            "'backoff' must be 'exponential', 'fixed' or a callable, not 'linear'.",
            "'jitter' must be between 0 and 1, not -1.",
        ):
            self.assertIn(part, message)

    def test_error_classes_may_be_a_list_or_one_class(self) -> None:
        policy = RETRY.build(retry_on=[KeyError, OSError], discard_on=FileNotFoundError)  # type: ignore[arg-type]
        self.assertEqual(policy.retry_on, (KeyError, OSError))
        self.assertEqual(policy.discard_on, (FileNotFoundError,))
        self.assertIsNotNone(policy.retry_in(ConnectionError(), 1))
        self.assertIsNone(policy.retry_in(FileNotFoundError(), 1))

    def test_instances_are_not_error_classes(self) -> None:
        with self.assertRaisesMessage(
            ConfigurationError, "'discard_on' must be a tuple of exception classes."
        ):
            RETRY.build(discard_on=(ValueError("no"),))  # type: ignore[arg-type]
        with self.assertRaisesMessage(
            ConfigurationError, "'retry_on' must be a tuple of exception classes."
        ):
            RETRY.build(retry_on=(int,))  # type: ignore[arg-type]

    def test_one_attempt_is_never_retried(self) -> None:
        policy = RETRY.build(1)
        self.assertIsNone(policy.retry_in(ValueError(), 1))

    def test_a_wait_above_max_wait_is_cut_to_max_wait(self) -> None:
        policy = RetryPolicy(wait=timedelta(seconds=10), max_wait=timedelta(seconds=1), jitter=0)
        self.assertEqual(policy.delay(1), timedelta(seconds=1))

    def test_no_wait_is_no_delay(self) -> None:
        policy = RetryPolicy(wait=timedelta(0), jitter=1)
        self.assertEqual({policy.delay(n) for n in range(1, 20)}, {timedelta(0)})

    def test_full_jitter_never_makes_a_delay_negative(self) -> None:
        policy = RetryPolicy(wait=timedelta(seconds=4), jitter=1)
        delays = [policy.delay(1) for _ in range(300)]
        self.assertTrue(all(timedelta(0) <= d <= timedelta(seconds=8) for d in delays))
        self.assertGreater(len(set(delays)), 1)

    def test_a_backoff_callable_is_given_the_failed_attempt_s_number(self) -> None:
        seen: list[int] = []

        def backoff(attempt: int) -> float:
            seen.append(attempt)
            return attempt * 10

        policy = RetryPolicy(attempts=5, backoff=backoff)
        self.assertEqual(policy.retry_in(ValueError(), 3), timedelta(seconds=30))
        self.assertIsNone(policy.retry_in(ValueError(), 5))
        self.assertEqual(seen, [3])

    def test_a_backoff_without_a_name_is_shown_by_its_repr(self) -> None:
        def raises(attempt: int, factor: int) -> float:
            raise LookupError("none")

        policy = RetryPolicy(backoff=functools.partial(raises, factor=2))
        with self.assertRaisesMessage(RetryPolicyError, "its backoff functools.partial("):
            policy.delay(1)

    def test_a_backoff_may_ask_for_exactly_the_longest_delay(self) -> None:
        policy = RetryPolicy(backoff=lambda attempt: timedelta(days=365))
        self.assertEqual(policy.delay(1), timedelta(days=365))
        just_over = RetryPolicy(backoff=lambda attempt: timedelta(days=365, microseconds=1))
        with self.assertRaisesMessage(RetryPolicyError, "not a delay from 0 to 365 days"):
            just_over.delay(1)


class UniquenessEdgeTests(SimpleTestCase):
    def test_the_task_keyword_forms(self) -> None:
        self.assertEqual(UNIQUE.declared(True), Uniqueness())
        given = UNIQUE.build(key="k")
        self.assertIs(UNIQUE.declared(given), given)
        self.assertEqual(UNIQUE.declared({"key": "k"}), given)
        with self.assertRaisesMessage(
            ConfigurationError, "@task(unique=...) takes True or a dict of unique() options, not 1"
        ):
            UNIQUE.declared(1)

    def test_states_may_be_any_iterable_of_names(self) -> None:
        states = ["ready", "scheduled", "blocked"]
        self.assertEqual(UNIQUE.build(states=states).states, tuple(states))
        self.assertEqual(UNIQUE.build(states=iter(states)).states, tuple(states))
        with self.assertRaisesMessage(ConfigurationError, "'states' must be a tuple of state"):
            UNIQUE.build(states=5)

    def test_within_is_a_timedelta(self) -> None:
        with self.assertRaisesMessage(
            ConfigurationError, "'within' must be a positive timedelta or None, not '1h'."
        ):
            unique(within="1h")  # type: ignore[arg-type]

    def test_every_problem_is_named_in_one_error(self) -> None:
        with self.assertRaises(ConfigurationError) as raised:
            UNIQUE.build(key="", within=timedelta(-1))
        self.assertIn("'key' must not be empty.", str(raised.exception))
        self.assertIn("'within' must be a positive timedelta", str(raised.exception))

    def test_an_unknown_stored_state_never_counts(self) -> None:
        self.assertIs(UNIQUE.build().counts("archived", None, NOW), False)

    def test_an_ended_job_without_an_end_time_does_not_count(self) -> None:
        within = UNIQUE.build(within=timedelta(hours=1))
        self.assertIs(within.counts("finished", None, NOW), False)
        self.assertIs(within.counts("finished", NOW - timedelta(minutes=59), NOW), True)
        self.assertIs(within.counts("finished", NOW - timedelta(hours=1), NOW), False)

    def test_a_listed_failed_state_counts_for_within(self) -> None:
        states = ("ready", "scheduled", "blocked", "running", "failed")
        uniqueness = UNIQUE.build(states=states, within=timedelta(minutes=5))
        self.assertIs(uniqueness.counts("failed", NOW - timedelta(minutes=1), NOW), True)
        self.assertIs(uniqueness.counts("finished", NOW - timedelta(minutes=1), NOW), False)


class UniqueKeyEdgeTests(SimpleTestCase):
    def test_a_task_without_the_option_claims_no_key(self) -> None:
        self.assertIsNone(claim_for(SAMPLE, (), {}, encode_arguments((), {})))

    def test_the_default_key_ignores_the_order_of_keyword_arguments(self) -> None:
        keyed = unique()(SAMPLE)
        self.assertEqual(claim_hash(keyed, a=1, b=2), claim_hash(keyed, b=2, a=1))
        self.assertNotEqual(claim_hash(keyed, a=1, b=2), claim_hash(keyed, a=2, b=1))

    def test_a_key_callable_may_return_any_argument_value(self) -> None:
        keyed = unique(key=lambda a=None, b=None: {"x": a, "y": b})(SAMPLE)
        self.assertEqual(claim_hash(keyed, 1, 2), claim_hash(keyed, b=2, a=1))
        dated = unique(key=lambda a=None, b=None: a)(SAMPLE)
        self.assertNotEqual(claim_hash(dated, NOW), claim_hash(dated, NOW + timedelta(1)))

    def test_a_key_that_is_no_argument_value_is_an_enqueue_error(self) -> None:
        keyed = unique(key=lambda a=None, b=None: {1, 2})(SAMPLE)
        with self.assertRaisesMessage(
            EnqueueError,
            f"The unique key of task {SAMPLE.module_path} must be a string or a value "
            "that serialises like an argument: Argument args[0] of type set",
        ):
            claim_hash(keyed)

    def test_a_key_callable_that_raises_is_an_enqueue_error(self) -> None:
        keyed = unique(key=lambda a=None, b=None: a["id"])(SAMPLE)
        with self.assertRaisesMessage(
            EnqueueError,
            f"The unique key of task {SAMPLE.module_path} could not be computed from its "
            "arguments: TypeError:",
        ):
            claim_hash(keyed, None)

    def test_an_idempotency_key_is_apart_from_a_unique_key_of_the_same_text(self) -> None:
        keyed = unique(key="abc")(SAMPLE)
        arguments = encode_arguments((), {})
        unique_claim = claim_for(keyed, (), {}, arguments)
        once_claim = claim_for(keyed, (), {}, arguments, once_key="abc")
        assert unique_claim is not None and once_claim is not None
        self.assertNotEqual(unique_claim.key_hash, once_claim.key_hash)
        self.assertEqual(once_claim.label, f"once:{SAMPLE.module_path}/abc")
        self.assertEqual(once_claim.uniqueness.counted_states, STATES)

    def test_labels_are_readable_and_bounded(self) -> None:
        keyed = unique(key=lambda a=None, b=None: f"nul\x00{a}")(SAMPLE)
        claim = claim_for(keyed, ("z" * 400,), {}, encode_arguments(("z" * 400,), {}))
        assert claim is not None
        self.assertEqual(len(claim.label), LABEL_MAX_LENGTH)
        self.assertTrue(claim.label.endswith("z…"), claim.label[-5:])
        self.assertIn("nul\\x00z", claim.label)
        self.assertEqual(len(claim.key_hash), 64)

    def test_a_lone_surrogate_in_a_key_hashes_apart(self) -> None:
        keyed = unique(key=lambda a=None, b=None: str(a))(SAMPLE)
        self.assertNotEqual(claim_hash(keyed, "\ud800"), claim_hash(keyed, "\ud801"))


class RateKeyEdgeTests(SimpleTestCase):
    def test_the_task_keyword_forms(self) -> None:
        rate = Rate(to=1, per=timedelta(minutes=1))
        self.assertIs(RATE_LIMIT.declared(rate), rate)
        for value, message in (
            ("10/m", "@task(rate_limit=...) takes a dict of rate_limit() options, not '10/m'."),
            (
                {"to": 1},
                "@task(rate_limit=...) takes a dict of rate_limit() options, not {'to': 1} "
                "(missing a required argument: 'per').",
            ),
            ({"to": 1, "per": timedelta(1), "burst": 2}, "unexpected keyword argument 'burst'"),
        ):
            with self.subTest(value=value), self.assertRaisesMessage(ConfigurationError, message):
                RATE_LIMIT.declared(value)

    def test_every_problem_is_named_in_one_error(self) -> None:
        with self.assertRaises(ConfigurationError) as raised:
            RATE_LIMIT.build(to=0, per=timedelta(microseconds=999), group=5)
        message = str(raised.exception)
        self.assertIn("'to' must be a whole number >= 1, not 0.", message)
        self.assertIn("'per' must be a timedelta of at least 1 ms", message)
        self.assertIn("'group' must be a non-empty string, not 5.", message)

    def test_lists_and_models_make_readable_keys(self) -> None:
        rate = RATE_LIMIT.build(to=1, per=timedelta(1), key=lambda a=None, b=None: [a, (b, 3)])
        self.assertEqual(rate.key_for(SAMPLE, ("x", "y"), {}), f"{SAMPLE.module_path}/x/y/3")
        by_row = RATE_LIMIT.build(to=1, per=timedelta(1), key=lambda a=None, b=None: a)
        self.assertEqual(
            by_row.key_for(SAMPLE, (LedgerEntry(pk=7),), {}),
            f"{SAMPLE.module_path}/testproject.ledgerentry:7",
        )

    def test_a_key_callable_that_raises_is_an_enqueue_error(self) -> None:
        rate = RATE_LIMIT.build(to=1, per=timedelta(1), key=lambda a=None, b=None: 1 / 0)
        with self.assertRaisesMessage(
            EnqueueError,
            f"The rate limit key of task {SAMPLE.module_path} could not be computed "
            "from its arguments: ZeroDivisionError: division by zero",
        ):
            rate.key_for(SAMPLE, (), {})

    def test_long_keys_that_differ_only_at_the_end_stay_apart(self) -> None:
        rate = RATE_LIMIT.build(to=1, per=timedelta(1), key=lambda a=None, b=None: a)
        first = rate.key_for(SAMPLE, ("k" * 300 + "1",), {})
        second = rate.key_for(SAMPLE, ("k" * 300 + "2",), {})
        self.assertEqual((len(first), len(second)), (KEY_MAX_LENGTH, KEY_MAX_LENGTH))
        self.assertNotEqual(first, second)
        prefix = f"{SAMPLE.module_path}/"
        fits = "k" * (KEY_MAX_LENGTH - len(prefix))
        self.assertEqual(rate.key_for(SAMPLE, (fits,), {}), prefix + fits)

    def test_windows_of_a_fraction_of_a_second(self) -> None:
        rate = Rate(to=1, per=timedelta(milliseconds=1500))
        self.assertEqual(rate.window_of(4_000_000), 3_000_000)
        self.assertEqual(rate.window_of(4_499_999), 3_000_000)
        self.assertEqual(rate.window_of(4_500_000), 4_500_000)


class QueueNameAndPriorityEdgeTests(SimpleTestCase):
    def test_a_name_of_64_characters_is_valid_and_65_is_not(self) -> None:
        self.assertIsNone(queue_name_error("q" * 64))
        self.assertEqual(
            queue_name_error("q" * 65),
            "Queue name 'qqqqqqqqqqqqqqqqqqqq...' is invalid (longer than 64 characters): "
            "use 1 to 64 characters from ASCII letters, digits and _ - . :.",
        )

    def test_names_that_are_not_strings_or_not_ascii_are_invalid(self) -> None:
        for name in (5, None, "", "ça", "a b", "a/b"):
            with self.subTest(name=name):
                self.assertEqual(
                    queue_name_error(name),
                    f"Queue name {name!r} is invalid: use 1 to 64 characters from ASCII "
                    "letters, digits and _ - . :.",
                )

    def test_a_whole_float_priority_is_valid_and_others_are_not(self) -> None:
        check_priority(5.0)
        check_priority(-100)
        for priority in (5.5, float("nan"), float("inf"), -101, None):
            with self.subTest(priority=priority), self.assertRaises(InvalidTask):
                check_priority(priority)


class TimeLimitEdgeTests(SimpleTestCase):
    def test_errors_name_what_was_given(self) -> None:
        self.assertEqual(TIME_LIMIT.build(0.5), 0.5)
        with self.assertRaisesMessage(
            ConfigurationError,
            "time_limit(): must be more than 0 seconds, not datetime.timedelta(0).",
        ):
            TIME_LIMIT.build(timedelta(0))
        with self.assertRaisesMessage(
            ConfigurationError, "time_limit(): must be a number of seconds or a timedelta"
        ):
            time_limits.time_limit("1m")  # type: ignore[arg-type]

    def test_a_timedelta_is_stored_as_seconds(self) -> None:
        self.assertEqual(TIME_LIMIT.build(timedelta(minutes=2)), 120.0)
        limited = time_limits.time_limit(timedelta(milliseconds=250))(SAMPLE)
        self.assertEqual(time_limits.limit_for(limited), 0.25)

    @override_settings(ROBUST_QUEUE={"time_limit": 30})
    def test_a_task_s_own_limit_wins_over_the_default(self) -> None:
        self.assertEqual(time_limits.limit_for(SAMPLE), 30.0)
        self.assertEqual(time_limits.limit_for(time_limits.time_limit(90)(SAMPLE)), 90.0)
        self.assertEqual(time_limits.limit_for(None), 30.0)


class TaskRetentionEdgeTests(SimpleTestCase):
    def test_the_task_keyword_forms(self) -> None:
        kept = TaskRetention(finished=None)
        self.assertIs(RETAIN.declared(kept), kept)
        self.assertEqual(
            RETAIN.declared({"finished": 90, "failed": None}),
            TaskRetention(finished=timedelta(seconds=90), failed=None),
        )
        for value in ({"finished": 5, "kept": 1}, "forever", ["finished"]):
            with (
                self.subTest(value=value),
                self.assertRaisesMessage(
                    ConfigurationError, "@task(retain=...) takes a dict with 'finished'"
                ),
            ):
                RETAIN.declared(value)

    def test_a_bad_keyword_value_names_the_keyword(self) -> None:
        with self.assertRaisesMessage(
            ConfigurationError, "@task(retain=...): 'failed' must be a positive timedelta"
        ):
            RETAIN.declared({"failed": -5})

    def test_merging_takes_the_other_s_own_options_only(self) -> None:
        base = TaskRetention(finished=timedelta(days=1), failed=timedelta(days=2))
        self.assertEqual(
            base.merged(TaskRetention(failed=None)),
            TaskRetention(finished=timedelta(days=1), failed=None),
        )
        self.assertEqual(base.merged(TaskRetention()), base)
        self.assertIs(TaskRetention(finished=None).own("finished"), True)
        self.assertIs(TaskRetention(finished=None).own("failed"), False)

    def test_given_global_explicitly_is_as_if_left_out(self) -> None:
        with self.assertRaisesMessage(ConfigurationError, "needs 'finished' and/or 'failed'"):
            RETAIN.build(finished=GLOBAL, failed=GLOBAL)
        kept = RETAIN.build(finished=GLOBAL, failed=60)
        self.assertEqual(kept, TaskRetention(failed=timedelta(seconds=60)))

    @override_settings(ROBUST_QUEUE={"task_retention": {5: {"finished": 60}}})
    def test_a_key_that_is_no_path_is_named(self) -> None:
        self.assertEqual(
            task_retention.validate_settings(),
            ['ROBUST_QUEUE["task_retention"] has key 5: a key is a task\'s dotted path'],
        )


class RecurringSettingsEdgeTests(SimpleTestCase):
    def test_a_setting_that_is_not_a_dict_is_one_error(self) -> None:
        with override_settings(ROBUST_QUEUE={"recurring_tasks": ["nightly"]}):
            self.assertEqual(
                recurrence.from_settings(),
                ([], ["ROBUST_QUEUE['recurring_tasks'] must be a dict of key -> task."]),
            )

    def test_an_entry_that_is_not_a_dict_is_named(self) -> None:
        entries = {"nightly": "testproject.tasks.add", "ok": {"task": tasks.add.module_path}}
        with override_settings(ROBUST_QUEUE={"recurring_tasks": entries}):
            definitions, errors = recurrence.from_settings()
        self.assertEqual([d.key for d in definitions], ["ok"])
        self.assertIn(
            "ROBUST_QUEUE['recurring_tasks']['nightly'] must be a dict with 'task' and 'schedule'.",
            errors,
        )
        self.assertIn("Recurring task 'ok': the schedule must be a cron string, not None.", errors)

    def test_definitions_refuse_to_start_on_any_problem(self) -> None:
        entries = {"bad": {"task": tasks.add.module_path, "schedule": "@daily", "priority": 500}}
        with (
            override_settings(ROBUST_QUEUE={"recurring_tasks": entries}),
            self.assertRaisesMessage(
                ConfigurationError,
                "Invalid recurring tasks: Recurring task 'bad': priority must be an integer "
                "from -100 to 100, not 500.",
            ),
        ):
            recurrence.definitions()

    @override_settings(TASKS={"dummy": {"BACKEND": f"{FRAMEWORK}.backends.dummy.DummyBackend"}})
    def test_no_robust_queue_alias_is_named(self) -> None:
        entries = {"nightly": {"task": tasks.add.module_path, "schedule": "@daily"}}
        with override_settings(ROBUST_QUEUE={"recurring_tasks": entries}):
            _, errors = recurrence.from_settings()
        self.assertEqual(
            errors,
            [
                "ROBUST_QUEUE['recurring_tasks']['nightly']: No TASKS alias uses the "
                "Robust Queue backend."
            ],
        )

    def test_definition_validation(self) -> None:
        def make(**options: object) -> list[str]:
            values: dict[str, object] = {"key": "k", "schedule": "@daily", "task_path": "a.b"}
            return RecurringDefinition(**{**values, **options}).validate()  # type: ignore[arg-type]

        self.assertEqual(make(), [])
        self.assertEqual(make(key="k" * 255), [])
        self.assertIn("the key must be a string of 1 to 255 characters", make(key="k" * 256)[0])
        self.assertIn("the key must be a string", make(key="")[0])
        self.assertIn(
            "priority must be an integer from -100 to 100, not True", make(priority=True)[0]
        )
        self.assertIn("the schedule must be a cron string, not '   '", make(schedule="   ")[0])
        self.assertEqual(len(make(key="", schedule="nope", priority=-101)), 3)


class QueueDatabaseEdgeTests(SimpleTestCase):
    @override_settings(
        TASKS={
            "dummy": {"BACKEND": f"{FRAMEWORK}.backends.dummy.DummyBackend"},
            "second": {"BACKEND": conf.BACKEND_PATH, "OPTIONS": {"database": "queue"}},
            "third": {"BACKEND": conf.BACKEND_PATH},
        }
    )
    def test_processes_work_on_the_first_robust_queue_alias_s_database(self) -> None:
        self.assertEqual(conf.robust_queue_aliases(), ["second", "third"])
        self.assertEqual(conf.queue_database(), "queue")
        self.assertEqual(conf.database_for("third"), "default")
        with override_settings(ROBUST_QUEUE={"database": "other"}):
            self.assertEqual(conf.queue_database(), "other")

    @override_settings(TASKS={"dummy": {"BACKEND": f"{FRAMEWORK}.backends.dummy.DummyBackend"}})
    def test_without_a_robust_queue_alias_the_default_database(self) -> None:
        self.assertEqual(conf.robust_queue_aliases(), [])
        self.assertEqual(conf.queue_database(), "default")

    @override_settings(
        TASKS={
            "default": {
                "BACKEND": conf.BACKEND_PATH,
                "OPTIONS": {"max_payload_bytes": 10, "max_return_value_bytes": 20},
            },
            "bare": {"BACKEND": conf.BACKEND_PATH, "OPTIONS": None},
        }
    )
    def test_size_limits_are_per_alias_with_defaults(self) -> None:
        self.assertEqual(conf.max_payload_bytes("default"), 10)
        self.assertEqual(conf.max_return_value_bytes("default"), 20)
        self.assertEqual(conf.max_payload_bytes("bare"), conf.DEFAULT_MAX_PAYLOAD_BYTES)
        self.assertEqual(conf.max_return_value_bytes("bare"), conf.DEFAULT_MAX_RETURN_VALUE_BYTES)
        self.assertEqual(conf.backend_options("missing"), {})
