"""How a value given in ``ROBUST_QUEUE`` becomes the value the code uses.

Each conversion returns the converted value or raises ``ValueError`` with
what it expects ("must be ..."); ``conf`` adds the key and the value given
to that, so every bad setting reads the same way:
``ROBUST_QUEUE["shutdown_timeout"] must be a number of seconds or a
timedelta, not 'soon'.``

A leaf: nothing here reads settings or imports the rest of the package.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

T = TypeVar("T")

# Longer than this is a mistake (a value in ms, a timedelta of days).
MAX_TIME_LIMIT = timedelta(days=7).total_seconds()
MIN_TOKEN_LENGTH = 16


def as_is(value: T) -> T:
    """A value whose shape its owner validates (workers, hooks, ...)."""
    return value


def seconds(value: Any) -> float:
    """A number of seconds or a ``timedelta``, as seconds."""
    result = _number(value)
    if math.isnan(result):
        raise ValueError("must be a number of seconds or a timedelta")
    return result


def positive_seconds(value: Any) -> float:
    """``seconds``, more than 0 and finite."""
    result = _number(value)
    if not 0 < result < math.inf:
        raise ValueError("must be more than 0 seconds")
    return result


def duration(value: Any) -> timedelta:
    """A ``timedelta``, or a number of seconds; 0 or more."""
    result = seconds(value)
    if not 0 <= result < math.inf:
        raise ValueError("must be 0 seconds or more")
    try:
        return value if isinstance(value, timedelta) else timedelta(seconds=result)
    except OverflowError:
        raise ValueError("must be a duration Python can hold") from None


def positive_duration(value: Any) -> timedelta:
    """``duration``, more than 0."""
    positive_seconds(value)
    return duration(value)


def time_limit(value: Any) -> float:
    """A time limit or grace period: more than 0 s, at most 7 days."""
    result = positive_seconds(value)
    if result > MAX_TIME_LIMIT:
        raise ValueError(f"must be at most {MAX_TIME_LIMIT:.0f} seconds (7 days)")
    return result


def flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("must be True or False")
    return value


def text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("must be a non-empty string")
    return value


def texts(value: Any) -> tuple[str, ...]:
    """A list or tuple of non-empty strings."""
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(item, str) and item for item in value
    ):
        raise ValueError("must be a list of non-empty strings")
    return tuple(value)


def model_labels(value: Any) -> frozenset[str]:
    """``app_label.modelname`` labels, lower case."""
    labels = texts(value)
    if not all(label.count(".") == 1 for label in labels):
        raise ValueError('must be a list of model labels such as "shop.order"')
    return frozenset(label.lower() for label in labels)


def token(value: Any) -> str:
    if not isinstance(value, str) or len(value) < MIN_TOKEN_LENGTH:
        raise ValueError(f"must be None or a string of at least {MIN_TOKEN_LENGTH} characters")
    return value


def optional(convert: Callable[[Any], T]) -> Callable[[Any], T | None]:
    """``convert``, letting None (the key's "off") through."""

    def converted(value: Any) -> T | None:
        return None if value is None else convert(value)

    converted.__doc__ = f"None, or {convert.__name__}."
    return converted


def _number(value: Any) -> float:
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("must be a number of seconds or a timedelta")
    try:
        return float(value)
    except OverflowError:
        # An int past a float's range: as long as forever.
        return math.inf
