"""What is stored is bounded: error records and return values."""

from __future__ import annotations

import json

from django.test import SimpleTestCase

from robust_queue.arguments import MAX_JSON_NESTING, storable_return_value
from robust_queue.exceptions import ReturnValueError
from robust_queue.models.error_record import (
    DEFAULT_MAX_ERROR_CHARS,
    error_record,
    storable_text,
)
from testproject.finalize_tasks import nested


def raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:  # noqa: BLE001 - returned for inspection
        return caught


class StorableTextTests(SimpleTestCase):
    def test_nul_and_lone_surrogates_become_escapes(self) -> None:
        """PostgreSQL refuses both in text and JSON; the escapes stay readable."""
        text = storable_text("a\x00b\ud800c\udfffd")
        self.assertEqual(text, "a\\x00b\\ud800c\\udfffd")
        text.encode("utf-8")  # no surrogate left

    def test_ordinary_text_is_unchanged(self) -> None:
        text = "Traceback: ünïcödé ✓ 😀\n"
        self.assertEqual(storable_text(text), text)

    def test_long_text_keeps_head_and_tail_around_a_marker(self) -> None:
        text = "H" * 1000 + "m" * 100_000 + "T" * 1000
        cut = storable_text(text, limit=4000)
        self.assertLessEqual(len(cut), 4000)
        self.assertTrue(cut.startswith("H" * 1000))
        self.assertTrue(cut.endswith("T" * 1000))
        head, marker, tail = cut.split("\n")
        removed = len(text) - len(head) - len(tail)
        self.assertEqual(marker, f"... [{removed} characters truncated] ...")


class ErrorRecordTests(SimpleTestCase):
    def test_a_ten_megabyte_message_is_stored_cut(self) -> None:
        record = error_record(raised(ValueError("m" * 10_000_000 + "END")))
        self.assertLessEqual(len(record["traceback"]), DEFAULT_MAX_ERROR_CHARS)
        self.assertIn("characters truncated", record["traceback"])
        self.assertTrue(record["traceback"].startswith("Traceback (most recent call last)"))
        self.assertTrue(record["traceback"].rstrip().endswith("END"))
        self.assertEqual(record["exception_class_path"], "builtins.ValueError")

    def test_awkward_characters_in_a_message_are_escaped(self) -> None:
        record = error_record(raised(ValueError("x\x00y\ud800z")))
        self.assertIn("ValueError: x\\x00y\\ud800z", record["traceback"])
        json.dumps(record, ensure_ascii=False).encode("utf-8")


class StorableReturnValueTests(SimpleTestCase):
    def test_plain_json_within_the_limits_is_returned_normalized(self) -> None:
        value = {"rows": (1, 2), "deep": nested(MAX_JSON_NESTING - 1)}
        self.assertEqual(
            storable_return_value(value, max_bytes=10_000),
            {"rows": [1, 2], "deep": nested(MAX_JSON_NESTING - 1)},
        )

    def test_nesting_at_the_limit_is_stored_one_more_is_refused(self) -> None:
        """MariaDB refuses JSON 32 levels deep (error 4025)."""
        self.assertEqual(MAX_JSON_NESTING, 31)
        storable_return_value(nested(31), max_bytes=10_000)
        with self.assertRaisesMessage(ReturnValueError, "nested more than 31"):
            storable_return_value(nested(32), max_bytes=10_000)
        with self.assertRaisesMessage(ReturnValueError, "nested more than 31"):
            storable_return_value({"a": {"b": [nested(30)]}}, max_bytes=10_000)

    def test_very_deep_and_cyclic_values_are_refused_without_recursion(self) -> None:
        with self.assertRaises(ReturnValueError):
            storable_return_value(nested(100_000), max_bytes=10_000)
        cycle: list = []
        cycle.append(cycle)
        with self.assertRaises(ReturnValueError):
            storable_return_value(cycle, max_bytes=10_000)

    def test_a_value_over_the_size_limit_is_refused(self) -> None:
        storable_return_value("x" * 98, max_bytes=100)  # 100 bytes with quotes
        with self.assertRaisesMessage(ReturnValueError, "101 bytes as JSON, over the limit of 100"):
            storable_return_value("x" * 99, max_bytes=100)

    def test_the_size_counts_escaped_characters(self) -> None:
        with self.assertRaises(ReturnValueError):
            storable_return_value("é" * 20, max_bytes=100)  # "\u00e9" is 6 bytes

    def test_a_value_that_is_not_json_is_refused(self) -> None:
        with self.assertRaisesMessage(ReturnValueError, "of type set"):
            storable_return_value({1, 2}, max_bytes=100)
