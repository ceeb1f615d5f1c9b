"""Secrets in free text (tracebacks, error messages, keys, log lines).

Three passes: values already known to be secret (masked elsewhere, e.g.
an argument by its name) wherever they appear; values of a known shape
(``shapes.py``); values written next to a secret name (``password=...``,
``"api_token": "..."``, ``Authorization: Bearer ...``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .names import Pattern, name_matches
from .shapes import hide_shapes

MASK = "********"
# Known values shorter than this are not hunted for in text: "1" or "ok"
# would mask half a traceback and hide nothing.
MIN_SECRET_LENGTH = 4

# name = value, name: value, 'name': 'value', "name"="value", and
# "Authorization: Bearer <token>".
# A name starts where no letter precedes it and is at most 128 characters:
# a search that tried every letter of a long word as a name's start would
# take time quadratic in the word (a 10 MB message took minutes).
_PAIR = re.compile(
    r"""(?<![A-Za-z])(?P<name>[A-Za-z_][\w.-]{0,127})(?P<quote>['"]?)(?P<sep>[ \t]*[:=][ \t]*)"""
    r"""(?P<value>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'"""
    r"""|(?:(?:Bearer|Basic|Token|Digest)[ \t]+)?[^\s,;&)\]}'"]+)""",
    re.IGNORECASE,
)
# "KeyError: 'x'" is an exception and its message, not a name and a value.
_EXCEPTION_NAME = re.compile(r"(Error|Exception|Warning|Exit)$")


def mask_text(
    text: str,
    names: Iterable[Pattern],
    shapes: tuple[re.Pattern[str], ...],
    secrets: Iterable[str] = (),
) -> str:
    """``text`` with known ``secrets``, matches of ``shapes`` and values
    given to a name matching ``names`` hidden behind ``MASK``."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if len(secret) >= MIN_SECRET_LENGTH:
            text = text.replace(secret, MASK)
    if shapes:
        text = hide_shapes(text, shapes, MASK)
    names = tuple(names)
    return _mask_pairs(text, names) if names else text


def _mask_pairs(text: str, names: tuple[Pattern, ...]) -> str:
    parts, position = [], 0
    while (match := _PAIR.search(text, position)) is not None:
        name = match.group("name")
        if _EXCEPTION_NAME.search(name) or not name_matches(name, names):
            # Only the name is consumed: its "value" may hold a pair.
            parts.append(text[position : match.end("sep")])
            position = match.end("sep")
            continue
        parts.append(text[position : match.start("value")] + MASK)
        position = match.end("value")
    parts.append(text[position:])
    return "".join(parts)
