"""The argument codec turns task arguments into JSON and back, without a DB."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from django.test import SimpleTestCase

from robust_queue.arguments import (
    DeserializationError,
    decode_arguments,
    encode_arguments,
    encoded_size,
    normalize_return_value,
)

SUPPORTED = (
    "supported: JSON types, datetime, date, time, timedelta, Decimal, UUID and model instances."
)


def round_trip(*args: Any, **kwargs: Any) -> tuple[list[Any], dict[str, Any]]:
    """Encode, store as a JSONField would (dumps/loads), and decode."""
    stored = json.loads(json.dumps(encode_arguments(args, kwargs)))
    return decode_arguments(stored)


class PlainJSONTests(SimpleTestCase):
    def test_plain_json_values_are_stored_as_they_are(self) -> None:
        """JSON types need no tags: the encoded form is the value itself."""
        args = ["text", 7, 2.5, True, None, [1, "a"], {"k": {"n": [None]}}]
        encoded = encode_arguments(args, {"flag": False, "count": 3})
        self.assertEqual(encoded, {"args": args, "kwargs": {"flag": False, "count": 3}})

    def test_bools_stay_bools_and_ints_stay_ints(self) -> None:
        """bool is an int subclass but must not decay into 0/1, nor 1 into True."""
        args, kwargs = round_trip(True, 1, flag=False, zero=0)
        self.assertIs(args[0], True)
        self.assertIs(type(args[1]), int)
        self.assertIs(kwargs["flag"], False)
        self.assertIs(type(kwargs["zero"]), int)

    def test_tuples_become_lists_at_any_depth(self) -> None:
        """Tuples are stored and returned as lists, as Django does."""
        args, kwargs = round_trip((1, 2), pairs={"p": ((1, "a"), (2, "b"))})
        self.assertEqual(args, [[1, 2]])
        self.assertEqual(kwargs, {"pairs": {"p": [[1, "a"], [2, "b"]]}})

    def test_encoded_arguments_are_pure_json(self) -> None:
        """Every tagged value survives json.dumps/loads unchanged."""
        encoded = encode_arguments(
            [dt.datetime(2030, 1, 2, 3, 4, 5), Decimal("1.5"), uuid.UUID(int=1)],
            {"span": dt.timedelta(seconds=1), "day": dt.date(2030, 1, 2)},
        )
        self.assertEqual(json.loads(json.dumps(encoded, allow_nan=False)), encoded)


class RoundTripTests(SimpleTestCase):
    def test_aware_datetime_keeps_its_utc_offset(self) -> None:
        """An aware datetime comes back as the same instant in the same offset."""
        offset = dt.timezone(dt.timedelta(hours=5, minutes=30))
        value = dt.datetime(2030, 6, 1, 12, 30, 45, 123456, tzinfo=offset)
        [decoded], _ = round_trip(value)
        self.assertEqual(decoded, value)
        self.assertEqual(decoded.utcoffset(), dt.timedelta(hours=5, minutes=30))
        self.assertEqual(decoded.microsecond, 123456)

    def test_negative_offset_survives(self) -> None:
        """Offsets west of UTC, with minutes, are kept too."""
        offset = dt.timezone(-dt.timedelta(hours=3, minutes=30))
        value = dt.datetime(2030, 12, 31, 23, 59, tzinfo=offset)
        _, kwargs = round_trip(when=value)
        self.assertEqual(kwargs["when"].utcoffset(), -dt.timedelta(hours=3, minutes=30))
        self.assertEqual(kwargs["when"], value)

    def test_naive_datetime_stays_naive(self) -> None:
        """A naive datetime is not made aware (nor shifted) on the way back."""
        value = dt.datetime(2030, 1, 2, 3, 4, 5, 6)
        [decoded], _ = round_trip(value)
        self.assertIsNone(decoded.tzinfo)
        self.assertEqual(decoded, value)

    def test_date_comes_back_as_a_date_not_a_datetime(self) -> None:
        """A date is tagged as a date, not confused with a datetime."""
        [decoded], _ = round_trip(dt.date(2030, 2, 28))
        self.assertIs(type(decoded), dt.date)
        self.assertEqual(decoded, dt.date(2030, 2, 28))

    def test_time_round_trips_with_microseconds_and_offset(self) -> None:
        """Naive and aware times both round-trip exactly."""
        aware = dt.time(8, 15, 0, 999, tzinfo=dt.timezone(dt.timedelta(hours=-7)))
        args, _ = round_trip(dt.time(23, 59, 59, 999999), aware)
        self.assertEqual(args, [dt.time(23, 59, 59, 999999), aware])
        self.assertEqual(args[1].utcoffset(), dt.timedelta(hours=-7))

    def test_timedelta_round_trips_exactly(self) -> None:
        """Negative, microsecond and very long durations lose nothing."""
        values = [
            dt.timedelta(microseconds=1),
            -dt.timedelta(seconds=1, microseconds=1),
            dt.timedelta(days=-3, hours=5),
            dt.timedelta(days=999_999_999, microseconds=999_999),
        ]
        args, _ = round_trip(*values)
        self.assertEqual(args, values)

    def test_timedelta_is_stored_without_floats(self) -> None:
        """A float of seconds would drop microseconds of long durations."""
        encoded = encode_arguments([dt.timedelta(days=10**6, microseconds=1)], {})
        payload = encoded["args"][0]["v"]
        self.assertTrue(all(type(part) is int for part in payload), payload)

    def test_decimal_keeps_every_digit_and_its_exponent(self) -> None:
        """Decimals are stored as strings: no float rounding, trailing zeros kept."""
        many = Decimal("-12345678901234567890.123456789012345678901234567890")
        args, _ = round_trip(many, Decimal("1.10"), Decimal("1E+3"))
        self.assertEqual(args, [many, Decimal("1.10"), Decimal("1E+3")])
        self.assertEqual([str(value) for value in args[1:]], ["1.10", "1E+3"])

    def test_uuid_round_trips(self) -> None:
        """A UUID comes back as a UUID, not a string."""
        value = uuid.uuid4()
        _, kwargs = round_trip(uid=value)
        self.assertIsInstance(kwargs["uid"], uuid.UUID)
        self.assertEqual(kwargs["uid"], value)

    def test_nested_structures_round_trip(self) -> None:
        """Tagged values are found inside lists and dicts at any depth."""
        value = {
            "rows": [
                {"on": dt.date(2030, 1, 1), "ids": (uuid.UUID(int=5),)},
                {"amounts": [Decimal("0.01"), [dt.timedelta(minutes=2)]]},
            ]
        }
        _, kwargs = round_trip(data=value)
        self.assertEqual(
            kwargs["data"],
            {
                "rows": [
                    {"on": dt.date(2030, 1, 1), "ids": [uuid.UUID(int=5)]},
                    {"amounts": [Decimal("0.01"), [dt.timedelta(minutes=2)]]},
                ]
            },
        )

    def test_user_dict_with_the_tag_key_round_trips(self) -> None:
        """A dict that has the "__rq__" key is escaped, not read as a tag."""
        value = {"__rq__": "mine", "v": 1, "when": dt.date(2030, 1, 1)}
        args, _ = round_trip(value)
        self.assertEqual(args, [value])

    def test_user_dict_that_looks_like_a_tag_stays_a_dict(self) -> None:
        """A user dict shaped like a tagged date is not turned into a date."""
        lookalike = {"__rq__": "date", "v": "2030-01-01"}
        nested = {"outer": [{"__rq__": "dict", "v": {}}]}
        args, kwargs = round_trip(lookalike, nested=nested)
        self.assertEqual(args, [lookalike])
        self.assertEqual(kwargs, {"nested": nested})

    def test_kwarg_named_like_the_tag_round_trips(self) -> None:
        """A keyword argument may itself be called "__rq__"."""
        _, kwargs = round_trip(**{"__rq__": "date", "v": 1})
        self.assertEqual(kwargs, {"__rq__": "date", "v": 1})


class EncodeErrorTests(SimpleTestCase):
    def assert_rejected(self, path: str, type_name: str, *args: Any, **kwargs: Any) -> None:
        message = f"Argument {path} of type {type_name} cannot be encoded; {SUPPORTED}"
        with self.assertRaisesMessage(TypeError, message):
            encode_arguments(args, kwargs)

    def test_set_is_rejected_by_position(self) -> None:
        """The message names the positional argument and the type."""
        self.assert_rejected("args[1]", "set", 1, {1, 2})

    def test_frozenset_and_bytes_are_rejected(self) -> None:
        """Neither is JSON, and bytes are not silently decoded."""
        self.assert_rejected("args[0]", "frozenset", frozenset())
        self.assert_rejected("kwargs['payload']", "bytes", payload=b"abc")

    def test_arbitrary_object_is_rejected_by_keyword(self) -> None:
        """An object passed by keyword is named by its keyword."""
        self.assert_rejected("kwargs['user']", "object", user=object())

    def test_lambda_and_class_are_rejected(self) -> None:
        """Callables and classes cannot be stored."""
        self.assert_rejected("args[0]", "function", lambda: None)
        self.assert_rejected("kwargs['cls']", "type", cls=Decimal)

    def test_nested_value_is_named_by_its_full_path(self) -> None:
        """Paths go through lists and dicts: kwargs['data'][2]['x']."""
        data = [1, 2, {"ok": 1, "x": {3}}]
        self.assert_rejected("kwargs['data'][2]['x']", "set", data=data)

    def test_nan_and_infinity_are_rejected(self) -> None:
        """JSON has no NaN or infinity; the path is named."""
        for value in (float("nan"), float("inf"), float("-inf")):
            with self.subTest(value=value):
                with self.assertRaisesMessage(TypeError, "Argument args[0][1] is"):
                    encode_arguments([[1.0, value]], {})

    def test_non_str_dict_key_is_rejected(self) -> None:
        """JSON would turn 1 into "1"; refuse instead of changing the key."""
        message = "Argument kwargs['m'] has the key 1 of type int; dict keys must be str."
        with self.assertRaisesMessage(TypeError, message):
            encode_arguments([], {"m": {1: "one"}})

    def test_non_str_kwargs_key_is_rejected(self) -> None:
        """A kwargs mapping with a non-str key is refused too."""
        with self.assertRaisesMessage(TypeError, "Argument kwargs has the key (1, 2)"):
            encode_arguments([], {(1, 2): "x"})  # type: ignore[dict-item]

    def test_unsaved_model_instance_is_rejected(self) -> None:
        """An instance without a pk cannot be fetched later."""
        message = "Argument args[0] is an unsaved User (its pk is None)"
        with self.assertRaisesMessage(TypeError, message):
            encode_arguments([User(username="ghost")], {})


class ModelReferenceTests(SimpleTestCase):
    def test_model_instance_is_stored_as_label_and_pk(self) -> None:
        """Encoding a saved instance reads its pk; no query is made."""
        encoded = encode_arguments([], {"user": User(pk=42)})
        self.assertEqual(
            encoded["kwargs"]["user"],
            {"__rq__": "model", "v": {"model": "auth.user", "pk": 42}},
        )

    def test_pk_is_encoded_recursively(self) -> None:
        """A non-JSON pk such as a UUID is itself tagged."""
        pk = uuid.UUID(int=9)
        encoded = encode_arguments([User(pk=pk)], {})
        self.assertEqual(encoded["args"][0]["v"]["pk"], {"__rq__": "uuid", "v": str(pk)})

    def test_without_fetching_model_references_stay_tagged(self) -> None:
        """fetch_models=False returns the stored dict and runs no query."""
        stored = json.loads(json.dumps(encode_arguments([User(pk=3)], {"n": 1})))
        args, kwargs = decode_arguments(stored, fetch_models=False)
        self.assertEqual(args, [{"__rq__": "model", "v": {"model": "auth.user", "pk": 3}}])
        self.assertEqual(kwargs, {"n": 1})


class DecodeErrorTests(SimpleTestCase):
    def test_unknown_tag_is_a_deserialization_error(self) -> None:
        """A tag this version does not know is refused, not passed through."""
        data = {"args": [{"__rq__": "complex", "v": [1, 2]}], "kwargs": {}}
        with self.assertRaisesMessage(DeserializationError, "Unknown argument tag 'complex'"):
            decode_arguments(data)

    def test_malformed_payloads_are_deserialization_errors(self) -> None:
        """A payload that does not parse as its tag says so, chained."""
        bad = [
            {"__rq__": "date", "v": "not a date"},
            {"__rq__": "decimal", "v": "1.2.3"},
            {"__rq__": "uuid", "v": 12},
            {"__rq__": "timedelta", "v": [1, 2]},
            {"__rq__": "dict", "v": [1]},
        ]
        for value in bad:
            with self.subTest(value=value):
                with self.assertRaisesMessage(DeserializationError, "Malformed"):
                    decode_arguments({"args": [value], "kwargs": {}})

    def test_missing_keys_decode_as_empty(self) -> None:
        """An empty mapping (a JSONField default) decodes to no arguments."""
        self.assertEqual(decode_arguments({}), ([], {}))


class EncodedSizeTests(SimpleTestCase):
    def test_size_is_of_compact_json(self) -> None:
        """No spaces after separators are counted."""
        data = {"args": [1, 2], "kwargs": {"a": "b"}}
        self.assertEqual(encoded_size(data), len('{"args":[1,2],"kwargs":{"a":"b"}}'))

    def test_non_ascii_is_counted_as_escaped_bytes(self) -> None:
        """Non-ASCII text counts as its \\u escape, as JSONField writes it."""
        self.assertEqual(encoded_size({"s": "é"}), len('{"s":"\\u00e9"}'))
        self.assertEqual(encoded_size({"s": "😀"}), len('{"s":"\\ud83d\\ude00"}'))


class NormalizeReturnValueTests(SimpleTestCase):
    def test_json_values_are_returned_as_they_are(self) -> None:
        """Plain JSON comes back equal, bools still bools."""
        value = {"ok": True, "n": 1, "x": 1.5, "s": "t", "none": None, "l": [False]}
        normal = normalize_return_value(value)
        self.assertEqual(normal, value)
        self.assertIs(normal["ok"], True)
        self.assertIs(normal["l"][0], False)

    def test_tuples_become_lists(self) -> None:
        """A returned tuple, also nested, is stored as a list."""
        self.assertEqual(normalize_return_value((1, {"p": (2, 3)})), [1, {"p": [2, 3]}])

    def test_tag_key_is_not_escaped(self) -> None:
        """Return values are untagged JSON, so "__rq__" keys are left alone."""
        value = {"__rq__": "date", "v": "2030-01-01"}
        self.assertEqual(normalize_return_value(value), value)

    def test_bytes_are_rejected(self) -> None:
        """Bytes are not JSON and are not decoded on the task's behalf."""
        with self.assertRaisesMessage(TypeError, "Return value of type bytes cannot be stored"):
            normalize_return_value(b"data")

    def test_argument_only_types_are_rejected(self) -> None:
        """Tagged argument types are not JSON return values."""
        for value in (Decimal("1"), dt.date(2030, 1, 1), uuid.UUID(int=1), {1, 2}):
            with self.subTest(value=value):
                message = f"Return value of type {type(value).__name__} cannot be stored"
                with self.assertRaisesMessage(TypeError, message):
                    normalize_return_value(value)

    def test_nested_bad_value_is_named_by_path(self) -> None:
        """The message says where inside the value the problem is."""
        with self.assertRaisesMessage(TypeError, "Return value['rows'][1] of type set"):
            normalize_return_value({"rows": [1, set()]})

    def test_nan_and_non_str_keys_are_rejected(self) -> None:
        """NaN/infinity and non-str keys cannot be stored as JSON."""
        with self.assertRaisesMessage(TypeError, "Return value[0] is nan"):
            normalize_return_value([float("nan")])
        with self.assertRaisesMessage(TypeError, "Return value has the key 1 of type int"):
            normalize_return_value({1: "one"})
