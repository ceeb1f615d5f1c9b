"""Secret names and values in free text (tracebacks, keys), masked.

A name matches a pattern case-insensitively: a plain string matches as a
substring (``"token"`` matches ``api_token`` and ``X-Token``), a string
with ``*``, ``?`` or ``[`` as a shell glob over the whole name, and a
compiled ``re.Pattern`` by ``search``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Union

MASK = "********"
Pattern = Union[str, "re.Pattern[str]"]
# Values shorter than this are not hunted for in text: "1" or "ok" would
# mask half a traceback and hide nothing.
MIN_SECRET_LENGTH = 4

# name = value, name: value, 'name': 'value', "name"="value", and
# "Authorization: Bearer <token>".
_PAIR = re.compile(
    r"""(?P<name>[A-Za-z_][\w.-]*)(?P<quote>['"]?)(?P<sep>[ \t]*[:=][ \t]*)"""
    r"""(?P<value>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'"""
    r"""|(?:(?:Bearer|Basic|Token|Digest)[ \t]+)?[^\s,;&)\]}'"]+)""",
    re.IGNORECASE,
)
# scheme://user:password@host
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-z][\w+.-]*://[^\s/:@]*:)[^\s/@]+(?=@)", re.I)
# "KeyError: 'x'" is an exception and its message, not a name and a value.
_EXCEPTION_NAME = re.compile(r"(Error|Exception|Warning|Exit)$")


def name_matches(name: str, patterns: Iterable[Pattern]) -> bool:
    """Whether ``name`` matches any of ``patterns`` (see module docstring)."""
    lowered = name.lower()
    for pattern in patterns:
        if isinstance(pattern, re.Pattern):
            if pattern.search(name):
                return True
        elif any(char in pattern for char in "*?["):
            if fnmatchcase(lowered, pattern.lower()):
                return True
        elif pattern.lower() in lowered:
            return True
    return False


def mask_text(text: str, patterns: Iterable[Pattern], secrets: Iterable[str] = ()) -> str:
    """``text`` with every known secret value and every value given to a
    matching name (``password=...``, ``"api_token": "..."``) masked."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if len(secret) >= MIN_SECRET_LENGTH:
            text = text.replace(secret, MASK)
    patterns = list(patterns)
    if not patterns:
        return text

    text = _mask_pairs(text, patterns)
    return _URL_PASSWORD.sub(lambda match: f"{match.group('head')}{MASK}", text)


def _mask_pairs(text: str, patterns: list[Pattern]) -> str:
    parts, position = [], 0
    while (match := _PAIR.search(text, position)) is not None:
        name = match.group("name")
        if _EXCEPTION_NAME.search(name) or not name_matches(name, patterns):
            # Only the name is consumed: its "value" may hold a pair.
            parts.append(text[position : match.end("sep")])
            position = match.end("sep")
            continue
        parts.append(text[position : match.start("value")] + MASK)
        position = match.end("value")
    parts.append(text[position:])
    return "".join(parts)
