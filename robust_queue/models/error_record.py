"""The stored form of one failed attempt, bounded for every database.

A leaf of the models: the failing paths (finalizing, performing, crash
recovery, cancelling) import it without importing any model.
"""

from __future__ import annotations

import traceback
from typing import Any

# A traceback (message included) longer than this keeps its head and tail.
DEFAULT_MAX_ERROR_CHARS = 64 * 1024
TRUNCATION_MARKER = "\n... [{count} characters truncated] ...\n"


def error_record(exc: BaseException) -> dict[str, str]:
    """The stored form of one failed attempt (Django's ``TaskError``).

    Bounded and storable on every database: see ``storable_text``.
    """
    cls = type(exc)
    return {
        "exception_class_path": storable_text(f"{cls.__module__}.{cls.__qualname__}"),
        "traceback": storable_text("".join(traceback.format_exception(exc))),
    }


def storable_text(text: str, limit: int = DEFAULT_MAX_ERROR_CHARS) -> str:
    """``text`` escaped and cut so that every database stores it.

    NUL characters and lone surrogates (which PostgreSQL refuses) become
    backslash escapes; text over ``limit`` characters keeps its head and
    its tail (where a traceback's message and last frames are) around a
    marker that says how much was cut.
    """
    text = text.replace("\x00", "\\x00")
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) <= limit:
        return text
    # The marker's own length is part of the limit.
    keep = max(limit - len(TRUNCATION_MARKER.format(count=len(text))), 0)
    marker = TRUNCATION_MARKER.format(count=len(text) - keep)
    head = keep // 2
    return text[:head] + marker + text[len(text) - (keep - head) :]


def stored_errors(value: Any) -> list[Any]:
    """A job's stored ``errors`` column as a new list to append to.

    The column may have been edited by hand: a value that is not a list
    is kept as the only entry (nothing is lost), and None reads as [].
    """
    if value is None:
        return []
    if isinstance(value, list):
        return list(value)
    return [value]
