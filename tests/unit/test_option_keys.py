"""The keys one call computes stay the same, to the byte: tables hold them.

Semaphores and blocked jobs hold concurrency keys, rate windows and waiting
jobs hold rate keys, ``UniqueKey`` rows hold the hash of a unique key. A
release that computed another key for the same call would let a second job
past a limit, or enqueue a duplicate. The values below were computed by
the code before ``options/keys.py`` (one key helper for the three).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.test import SimpleTestCase

from robust_queue import limits_concurrency, rate_limit, unique
from robust_queue.arguments import encode_arguments
from robust_queue.compat import task
from robust_queue.options.concurrency import concurrency_key
from robust_queue.options.rate_limits import rate_key
from robust_queue.options.unique_claims import claim_for
from testproject.models import LedgerEntry


def _sample(a: object = None, b: object = None) -> None:
    """A function of this module to declare tasks from."""


SAMPLE = task()(_sample)
PATH = "tests.unit.test_option_keys._sample"
ROW = LedgerEntry(pk=7)
HOUR = timedelta(hours=1)
WHEN = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)

Case = tuple[Any, tuple[Any, ...], dict[str, Any], str]


def _by_a(a: object = None, b: object = None) -> object:
    return a


CONCURRENCY_KEYS: dict[str, Case] = {
    "literal": (limits_concurrency("k")(SAMPLE), (), {}, PATH + "/k"),
    "grouped": (limits_concurrency(_by_a, group="accounts")(SAMPLE), ("x",), {}, "accounts/x"),
    "list": (
        limits_concurrency(lambda a=None, b=None: [a, (b, 3)])(SAMPLE),
        ("x", "y"),
        {},
        PATH + "/x/y/3",
    ),
    "row": (limits_concurrency(_by_a)(SAMPLE), (ROW,), {}, PATH + "/testproject.ledgerentry:7"),
    "none": (limits_concurrency(_by_a)(SAMPLE), (), {}, PATH + "/None"),
    "number": (limits_concurrency(lambda a=None, b=None: b)(SAMPLE), (), {"b": 42}, PATH + "/42"),
    "long": (
        limits_concurrency(_by_a)(SAMPLE),
        ("k" * 300,),
        {},
        PATH
        + "/"
        + "k" * 154
        + "#3e9a9bc9f47790db025d3e15c660b4468b9df34ec1d3aae73b14b9e29194a996",
    ),
    "long-unicode": (
        limits_concurrency(_by_a)(SAMPLE),
        ("é" * 300,),
        {},
        PATH
        + "/"
        + "é" * 154
        + "#59740d1809169ba624a3f0d9474186a04f309904cd0573cc3ce3b5a639bc8632",
    ),
}

RATE_KEYS: dict[str, Case] = {
    "no-key": (rate_limit(to=1, per=HOUR)(SAMPLE), (), {}, PATH + "/"),
    "none": (rate_limit(to=1, per=HOUR, key=_by_a)(SAMPLE), (), {}, PATH + "/"),
    "list": (
        rate_limit(to=1, per=HOUR, key=lambda a=None, b=None: [a, b])(SAMPLE),
        (None, ROW),
        {},
        PATH + "/None/testproject.ledgerentry:7",
    ),
    "grouped": (rate_limit(to=1, per=HOUR, key="k", group="api")(SAMPLE), (), {}, "api/k"),
    "long": (
        rate_limit(to=1, per=HOUR, key=_by_a)(SAMPLE),
        ("k" * 300,),
        {},
        PATH
        + "/"
        + "k" * 149
        + "#3e9a9bc9f47790db025d3e15c660b4468b9df34ec1d3aae73b14b9e29194a996",
    ),
    "long-surrogate": (
        rate_limit(to=1, per=HOUR, key=_by_a)(SAMPLE),
        ("\ud800" * 300,),
        {},
        PATH
        + "/"
        + "\ud800" * 149
        + "#516c24c6be2d74ab5241c45156ed01a7f3c3afed21960a7f64d5cb295951e98b",
    ),
}

# The hash (the unique column) and the label of each claim.
UNIQUE_CLAIMS: dict[str, tuple[Any, tuple[Any, ...], dict[str, Any], str, str]] = {
    "arguments": (
        unique()(SAMPLE),
        (1,),
        {"b": [2, "x"]},
        "4c4042fd5246387203b17ed672e8f2b18701b5ed98dea62fce1564d1ff5e206f",
        f'unique:{PATH}/{{"args":[1],"kwargs":{{"b":[2,"x"]}}}}',
    ),
    "literal": (
        unique("abc")(SAMPLE),
        (),
        {},
        "917e7f82bfee66bac858069811ab8bf09dd7a37cb41a1e8d3f9cc214808f4881",
        f"unique:{PATH}/abc",
    ),
    "callable-dict": (
        unique(lambda a=None, b=None: {"y": b, "x": a})(SAMPLE),
        (1,),
        {"b": "é"},
        "f99251db0a75cdedca3aade5c6e6c9b4121fd70a528b6c20f0bd3962a180b9e9",
        f'unique:{PATH}/{{"x":1,"y":"é"}}',
    ),
    "callable-date": (
        unique(_by_a)(SAMPLE),
        (WHEN,),
        {},
        "328f30a3df6de4dfaa1a9d2a15199cd44094aeaa1bfe8029dab82e7acde13d75",
        f'unique:{PATH}/{{"__rq__":"datetime","v":"2024-06-01T12:00:00+00:00"}}',
    ),
    "callable-none": (
        unique(_by_a)(SAMPLE),
        (),
        {},
        "5c4f7ac0c650a28273b71a29c5626b7ad9b03e69c7cd442c1ce02d120a21168f",
        f"unique:{PATH}/null",
    ),
    "callable-str": (
        unique(lambda a=None, b=None: f"id-{a}")(SAMPLE),
        (5,),
        {},
        "86dd46f4e1689b89e96a15751303abc19c7eb531e76b442142ab5795e74f0fd6",
        f"unique:{PATH}/id-5",
    ),
}


class PinnedKeyTests(SimpleTestCase):
    def test_concurrency_keys_are_unchanged(self) -> None:
        for name, (declared, args, kwargs, expected) in CONCURRENCY_KEYS.items():
            with self.subTest(name):
                self.assertEqual(concurrency_key(declared, args, kwargs), expected)

    def test_rate_keys_are_unchanged(self) -> None:
        for name, (declared, args, kwargs, expected) in RATE_KEYS.items():
            with self.subTest(name):
                self.assertEqual(rate_key(declared, args, kwargs), expected)

    def test_unique_claims_are_unchanged(self) -> None:
        for name, (declared, args, kwargs, key_hash, label) in UNIQUE_CLAIMS.items():
            with self.subTest(name):
                claim = claim_for(declared, args, kwargs, encode_arguments(args, kwargs))
                assert claim is not None
                self.assertEqual((claim.key_hash, claim.label), (key_hash, label))

    def test_an_idempotency_claim_is_unchanged(self) -> None:
        claim = claim_for(SAMPLE, (), {}, encode_arguments((), {}), once_key="order-1")
        assert claim is not None
        self.assertEqual(
            (claim.key_hash, claim.label),
            (
                "4053a1293be8d3bf0adc639a6278c60d6ab1b0ba4af4d366f16b7c2fe3b5d8f7",
                f"once:{PATH}/order-1",
            ),
        )
