"""The conversions of ROBUST_QUEUE values: what each accepts, what it gives,
and what it says about a value it refuses (no database, no settings)."""

from __future__ import annotations

import math
from datetime import timedelta

from django.test import SimpleTestCase

from robust_queue import conversions as c


class SecondsTests(SimpleTestCase):
    def test_numbers_and_timedeltas_become_seconds(self) -> None:
        self.assertEqual(c.seconds(5), 5.0)
        self.assertEqual(c.seconds(0.25), 0.25)
        self.assertEqual(c.seconds(timedelta(minutes=2)), 120.0)
        self.assertEqual(c.seconds(0), 0.0)
        self.assertEqual(c.seconds(-1), -1.0)  # ranges are the owner's to check

    def test_what_is_not_a_duration_is_refused(self) -> None:
        for value in ("5", None, True, [5], math.nan):
            with (
                self.subTest(value=value),
                self.assertRaisesMessage(ValueError, "must be a number of seconds or a timedelta"),
            ):
                c.seconds(value)

    def test_a_huge_integer_is_forever_not_an_overflow(self) -> None:
        self.assertEqual(c.seconds(10**400), math.inf)
        with self.assertRaisesMessage(ValueError, "must be more than 0 seconds"):
            c.positive_seconds(10**400)

    def test_positive_seconds_are_more_than_zero_and_finite(self) -> None:
        self.assertEqual(c.positive_seconds(timedelta(milliseconds=1)), 0.001)
        for value in (0, -3, math.inf, math.nan, timedelta(0)):
            with (
                self.subTest(value=value),
                self.assertRaisesMessage(ValueError, "must be more than 0 seconds"),
            ):
                c.positive_seconds(value)


class DurationTests(SimpleTestCase):
    def test_a_timedelta_is_kept_and_seconds_become_one(self) -> None:
        week = timedelta(days=7)
        self.assertIs(c.duration(week), week)
        self.assertEqual(c.duration(90), timedelta(seconds=90))
        self.assertEqual(c.duration(0), timedelta(0))

    def test_negative_and_endless_durations_are_refused(self) -> None:
        for value in (-1, timedelta(seconds=-1), math.inf):
            with (
                self.subTest(value=value),
                self.assertRaisesMessage(ValueError, "must be 0 seconds or more"),
            ):
                c.duration(value)

    def test_a_duration_past_timedelta_s_range_is_refused(self) -> None:
        with self.assertRaisesMessage(ValueError, "must be a duration Python can hold"):
            c.duration(1e18)

    def test_a_positive_duration_refuses_zero(self) -> None:
        self.assertEqual(c.positive_duration(1), timedelta(seconds=1))
        with self.assertRaisesMessage(ValueError, "must be more than 0 seconds"):
            c.positive_duration(timedelta(0))


class TimeLimitTests(SimpleTestCase):
    def test_up_to_seven_days(self) -> None:
        self.assertEqual(c.time_limit(timedelta(days=7)), 604800.0)
        with self.assertRaisesMessage(ValueError, "must be at most 604800 seconds (7 days)"):
            c.time_limit(604801)


class ScalarTests(SimpleTestCase):
    def test_flag_takes_only_booleans(self) -> None:
        self.assertIs(c.flag(False), False)
        for value in (0, 1, "yes", None):
            with (
                self.subTest(value=value),
                self.assertRaisesMessage(ValueError, "must be True or False"),
            ):
                c.flag(value)

    def test_text_is_a_non_empty_string(self) -> None:
        self.assertEqual(c.text("queue"), "queue")
        for value in ("", 3, None, b"queue"):
            with self.subTest(value=value), self.assertRaises(ValueError):
                c.text(value)

    def test_texts_is_a_list_or_tuple_of_non_empty_strings(self) -> None:
        self.assertEqual(c.texts(["a", "b"]), ("a", "b"))
        self.assertEqual(c.texts(()), ())
        # A bare string is one mistake away from a list of its letters.
        for value in ("shop.tasks", ["a", ""], ["a", 3], {"a"}):
            with (
                self.subTest(value=value),
                self.assertRaisesMessage(ValueError, "must be a list of non-empty strings"),
            ):
                c.texts(value)

    def test_model_labels_are_lower_cased_app_dot_model(self) -> None:
        self.assertEqual(
            c.model_labels(["Shop.Order", "auth.user"]), frozenset({"shop.order", "auth.user"})
        )
        for value in (["order"], ["a.b.c"]):
            with self.subTest(value=value), self.assertRaisesMessage(ValueError, "model labels"):
                c.model_labels(value)

    def test_a_token_has_at_least_sixteen_characters(self) -> None:
        self.assertEqual(c.token("x" * 16), "x" * 16)
        for value in ("x" * 15, 1234567890123456789, None):
            with (
                self.subTest(value=value),
                self.assertRaisesMessage(ValueError, "at least 16 characters"),
            ):
                c.token(value)

    def test_as_is_returns_the_same_object(self) -> None:
        entries = [{"queues": ["a"]}]
        self.assertIs(c.as_is(entries), entries)


class OptionalTests(SimpleTestCase):
    def test_none_passes_and_anything_else_is_converted(self) -> None:
        optional_duration = c.optional(c.duration)
        self.assertIsNone(optional_duration(None))
        self.assertEqual(optional_duration(60), timedelta(minutes=1))
        with self.assertRaisesMessage(ValueError, "must be 0 seconds or more"):
            optional_duration(-1)

    def test_it_says_what_it_wraps(self) -> None:
        self.assertEqual(c.optional(c.token).__doc__, "None, or token.")
