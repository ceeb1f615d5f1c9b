"""How a value given in ``ROBUST_QUEUE`` becomes the value the code uses.

Each conversion returns the converted value or raises ``ValueError`` with
what it expects ("must be ..."); ``conf`` adds the key and the value given
to that, so every bad setting reads the same way:
``ROBUST_QUEUE["shutdown_timeout"] must be a number of seconds or a
timedelta, not 'soon'.``

A leaf: nothing here reads settings or imports the rest of the package.
"""

from __future__ import annotations

import logging
import math
import re
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


def positive_number(value: Any) -> float:
    """A number (a ratio), more than 0 and finite."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a number more than 0")
    if not 0 < value < math.inf:
        raise ValueError("must be a number more than 0")
    return float(value)


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


def log_level(value: Any) -> int:
    """A logging level: a number from 0 up, or a name ``logging`` knows
    (``"INFO"``, ``"debug"``)."""
    if isinstance(value, str):
        number = logging.getLevelName(value.upper())
        if isinstance(number, int):
            return number
        raise ValueError("must be a logging level: a number or a name such as 'INFO'")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("must be a logging level: a number or a name such as 'INFO'")
    return int(value)


def job_log(value: Any) -> int | None:
    """A job log setting: False or None (off), True (every record that
    reaches the root logger), or the lowest level captured."""
    if value is None or value is False:
        return None
    if value is True:
        return logging.NOTSET
    return log_level(value)


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


def text_or_texts_by_name(value: Any) -> str | dict[str, str]:
    """A non-empty string, or a dict of non-empty strings by non-empty
    name (``listen_database``: one target, or one per database alias)."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, dict) and all(
        isinstance(name, str) and name and isinstance(item, str) and item
        for name, item in value.items()
    ):
        return dict(value)
    raise ValueError("must be a non-empty string, or a dict of them by database alias")


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


def name_patterns(value: Any) -> tuple[str | re.Pattern[str], ...]:
    """Names (plain words or globs) and compiled regular expressions."""
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(item, re.Pattern) or (isinstance(item, str) and item.strip()) for item in value
    ):
        raise ValueError(
            "must be a list of non-empty names (words or globs) or compiled regular expressions"
        )
    return tuple(value)


def regexes(value: Any) -> tuple[re.Pattern[str], ...]:
    """Regular expressions (strings or compiled), none matching ''."""
    if not isinstance(value, (list, tuple)):
        raise ValueError("must be a list of regular expressions")
    compiled = []
    for item in value:
        try:
            pattern = item if isinstance(item, re.Pattern) else re.compile(item, re.DOTALL)
        except (re.error, TypeError) as exc:
            raise ValueError(
                f"must be a list of regular expressions; {item!r} is not one ({exc})"
            ) from None
        if pattern.search("") is not None:
            raise ValueError(
                f"must be a list of regular expressions; {item!r} matches the empty string"
            )
        compiled.append(pattern)
    return tuple(compiled)


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
