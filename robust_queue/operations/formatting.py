"""Numbers, durations and text as the admin and the commands print them:
plain strings, no HTML."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import formats

__all__ = ["duration", "number", "text"]


def text(value: Any) -> str:
    """``str(value)`` that encodes as UTF-8 (lone surrogates escaped)."""
    string = value if isinstance(value, str) else str(value)
    try:
        string.encode("utf-8")
    except UnicodeEncodeError:
        return string.encode("utf-8", "backslashreplace").decode("utf-8")
    return string


def number(value: int) -> str:
    """``value`` with the admin's locale thousands separators."""
    return formats.number_format(value, force_grouping=True)


def duration(value: timedelta | None) -> str:
    """A duration in the largest units that read well: "250 ms", "12 s",
    "4 min 5 s", "2 h 5 min", "3 d 4 h"; "—" for none."""
    if value is None:
        return "—"
    total = value.total_seconds()
    if 0 < abs(total) < 1:
        # A quick job's wait or run: "0 s" would say nothing.
        return f"{'-' if total < 0 else ''}{round(abs(total) * 1000)} ms"
    seconds = int(total)
    sign, seconds = ("-", -seconds) if seconds < 0 else ("", seconds)
    if seconds < 60:
        return f"{sign}{seconds} s"
    for unit, size, small, small_size in (
        ("d", 86400, "h", 3600),
        ("h", 3600, "min", 60),
        ("min", 60, "s", 1),
    ):
        if seconds >= size:
            rest = (seconds % size) // small_size
            return f"{sign}{seconds // size} {unit}" + (f" {rest} {small}" if rest else "")
    return f"{sign}{seconds} s"  # pragma: no cover
