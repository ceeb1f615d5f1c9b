"""One option protocol: every option of ``RobustQueueTask`` is an ``Option``,
whose decorator and ``@task`` keyword build the same value and fail with
one wording, and whose ``of()`` reads it from any task."""

from __future__ import annotations

import inspect
from dataclasses import fields
from datetime import timedelta
from typing import Any

from django.test import SimpleTestCase

import robust_queue
from robust_queue.compat import Task, task
from robust_queue.exceptions import ConfigurationError
from robust_queue.options.option import Option
from robust_queue.options.task import OPTIONS, RobustQueueTask
from testproject import tasks

# A RobustQueueTask given @task keywords (Django 6.0's @task takes none).
from .test_task_options import build as declare


def _sample(a: object = None) -> None:
    """A function of this module to declare tasks from."""


SAMPLE = task()(_sample)
BY_NAME = {option.name: option for option in OPTIONS}

# Per option: the decorator's options as the keyword's dict, options it
# refuses and what it says of them, and a keyword value of the wrong kind.
CASES: dict[str, tuple[dict[str, Any], dict[str, Any], str, object]] = {
    "limits_concurrency": (
        {"key": "k", "to": 2},
        {"key": "k", "to": 0},
        "'to' must be an integer >= 1, not 0.",
        5,
    ),
    "retry": ({"attempts": 4}, {"attempts": 0}, "'attempts' must be at least 1", "often"),
    "unique": ({"key": "k"}, {"key": ""}, "'key' must not be empty.", 1),
    "rate_limit": (
        {"to": 2, "per": timedelta(minutes=1)},
        {"to": 0, "per": timedelta(minutes=1)},
        "'to' must be a whole number >= 1, not 0.",
        "10/m",
    ),
    "retain": (
        {"finished": timedelta(days=1)},
        {"finished": -5},
        "'finished' must be a positive timedelta",
        "forever",
    ),
    # Tags are names, not options: @tags("a") is tags=["a"] (see below).
    "tags": ({}, {}, "", "billing"),
    "time_limit": ({"limit": 30}, {"limit": -1}, "must be more than 0 seconds, not -1.", None),
    # Aliases are paths, not options: @aliases("a.b") is aliases=["a.b"].
    "aliases": ({}, {}, "", 5),
    "job_log": (
        {"level": "INFO"},
        {"level": "LOUD"},
        "'level' must be a logging level: a number or a name such as 'INFO', not 'LOUD'.",
        "often",
    ),
    "encrypted": (
        {"result": True},
        {"result": "yes"},
        "'result' must be True or False, not 'yes'.",
        "often",
    ),
    # No cap here: a cap and limits_concurrency on one task are refused.
    "fair_group": (
        {"key": "acme"},
        {"key": ""},
        "group '' is not a string of 1 to 100 characters without control characters.",
        5,
    ),
}


class RegistryTests(SimpleTestCase):
    def test_every_option_field_has_one_option(self) -> None:
        own = {field.name for field in fields(RobustQueueTask)} - {
            field.name for field in fields(Task)
        }
        self.assertEqual(set(BY_NAME), own)
        self.assertEqual(len(BY_NAME), len(OPTIONS))
        self.assertEqual(set(CASES), own)

    def test_every_public_decorator_is_built_from_its_option(self) -> None:
        for name, option in BY_NAME.items():
            decorator = getattr(robust_queue, name)
            with self.subTest(name):
                self.assertIsInstance(option, Option)
                self.assertEqual(decorator.__name__, name)
                self.assertTrue(decorator.__doc__)
                shown = inspect.signature(decorator)
                self.assertEqual(
                    list(shown.parameters), list(inspect.signature(option.make).parameters)
                )


class SameValueTests(SimpleTestCase):
    def test_the_decorator_and_the_keyword_build_the_same_value(self) -> None:
        for name, (keywords, *_) in CASES.items():
            if not keywords:
                continue
            option = BY_NAME[name]
            with self.subTest(name):
                decorated = getattr(robust_queue, name)(**keywords)(SAMPLE)
                declared = declare(**{name: keywords})
                self.assertEqual(option.of(decorated), option.of(declared))
                self.assertIsNotNone(option.of(declared))

    def test_the_keyword_s_short_forms(self) -> None:
        self.assertEqual(declare(tags=["b", "a", "b"]).tags, ("a", "b"))
        self.assertEqual(declare(tags=("b", "a")).tags, robust_queue.tags("b", "a")(SAMPLE).tags)  # type: ignore[attr-defined]
        self.assertIsNone(declare(tags=[]).tags)
        self.assertEqual(declare(time_limit=timedelta(seconds=90)).time_limit, 90.0)
        self.assertEqual(declare(unique=True).unique, BY_NAME["unique"].build())
        self.assertIsNone(declare(unique=False).unique)

    def test_a_using_copy_keeps_every_value(self) -> None:
        declared = declare(**{name: keywords for name, (keywords, *_) in CASES.items() if keywords})
        declared = robust_queue.tags("x")(declared)  # type: ignore[assignment]
        declared = robust_queue.aliases("tests.unit.gone.protocol_sample")(declared)  # type: ignore[attr-defined]
        copy = declared.using(priority=3)
        for option in OPTIONS:
            with self.subTest(option.name):
                self.assertIsNotNone(option.of(copy))
                self.assertEqual(option.of(copy), option.of(declared))

    def test_of_reads_any_task_or_none(self) -> None:
        for option in OPTIONS:
            with self.subTest(option.name):
                self.assertIsNone(option.of(None))
                self.assertIsNone(option.of(_sample))
                self.assertIsNone(option.of(tasks.add))


class OneWordingTests(SimpleTestCase):
    def test_bad_values_name_the_decorator_or_the_keyword(self) -> None:
        for name, (_, bad, message, _) in CASES.items():
            if not bad:
                continue
            option = BY_NAME[name]
            with self.subTest(name):
                with self.assertRaisesMessage(ConfigurationError, f"{name}(): {message}"):
                    option.build(**bad)
                with self.assertRaisesMessage(ConfigurationError, f"@task({name}=...): {message}"):
                    declare(**{name: bad})

    def test_a_keyword_of_the_wrong_kind_says_what_it_takes(self) -> None:
        for name, (*_, wrong) in CASES.items():
            if wrong is None:
                continue  # time_limit=value is @time_limit(value)
            with (
                self.subTest(name),
                self.assertRaisesMessage(ConfigurationError, f"@task({name}=...) takes "),
            ):
                declare(**{name: wrong})
        with self.assertRaisesMessage(
            ConfigurationError,
            "@task(retry=...) takes a dict of retry() options, not 'often'.",
        ):
            declare(retry="often")

    def test_a_dict_with_an_unknown_option_names_it(self) -> None:
        with self.assertRaisesMessage(
            ConfigurationError,
            "@task(retain=...) takes a dict with 'finished' and/or 'failed', not "
            "{'kept': 1} (got an unexpected keyword argument 'kept').",
        ):
            declare(retain={"kept": 1})

    def test_a_decorator_called_wrongly_names_itself(self) -> None:
        with self.assertRaisesMessage(
            TypeError, "retry(): got an unexpected keyword argument 'colour'"
        ):
            robust_queue.retry(colour=1)  # type: ignore[call-arg]
        with self.assertRaisesMessage(TypeError, "rate_limit(): missing a required argument"):
            robust_queue.rate_limit(to=1)  # type: ignore[call-arg]
