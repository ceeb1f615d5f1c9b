"""Secret names: which argument, key or field names hide their value.

A name is read as words: ``apiKey``, ``API_KEY``, ``x-api-key`` and
``api.key`` are all the words ``api key``. A plain pattern matches a name
holding its words in a row (``"token"`` matches ``access_token`` and
``X-Token``, not ``tokenizer``; ``"api_key"`` matches ``apiKey`` and
``apikey``, not a bare ``key``); a last word may take a plural ``s``. A
pattern with ``*``, ``?`` or ``[`` is a shell glob over the whole name, and
a compiled ``re.Pattern`` is searched. Matching ignores case.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Union

Pattern = Union[str, "re.Pattern[str]"]

# Upper-case runs (an acronym before a capitalised word splits before
# it: "APIKey" is "API", "Key"), capitalised or lower-case words, digits.
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_GLOB = frozenset("*?[")


def words(name: str) -> list[str]:
    """The lower-case words of ``name`` (``"XApiKey"`` -> x, api, key)."""
    return list(_words(name))


# Cached: a search masks thousands of tracebacks, each pair and argument
# name against every pattern (the patterns and most names repeat).
@lru_cache(maxsize=4096)
def _words(name: str) -> tuple[str, ...]:
    return tuple(word.lower() for word in _WORD.findall(name))


def name_matches(name: str, patterns: Iterable[Pattern]) -> bool:
    """Whether ``name`` matches any of ``patterns`` (module docstring)."""
    if isinstance(patterns, tuple):
        try:
            return _matches_cached(name, patterns)
        except TypeError:  # an unhashable pattern: match it uncached
            pass
    return _matches(name, patterns)


@lru_cache(maxsize=8192)
def _matches_cached(name: str, patterns: tuple[Pattern, ...]) -> bool:
    return _matches(name, patterns)


def _matches(name: str, patterns: Iterable[Pattern]) -> bool:
    named: tuple[str, ...] | None = None
    for pattern in patterns:
        if isinstance(pattern, re.Pattern):
            if pattern.search(name):
                return True
        elif _GLOB.intersection(pattern):
            if fnmatchcase(name.lower(), pattern.lower()):
                return True
        else:
            named = _words(name) if named is None else named
            if _has_words(named, _words(pattern)):
                return True
    return False


def _has_words(named: tuple[str, ...], wanted: tuple[str, ...]) -> bool:
    if not wanted:
        # A pattern with no letters or digits ("" or "_"): every name.
        return True
    joined = "".join(wanted)
    if any(_same(word, joined) for word in named):
        return True
    size = len(wanted)
    return any(
        named[start : start + size - 1] == wanted[:-1]
        and _same(named[start + size - 1], wanted[-1])
        for start in range(len(named) - size + 1)
    )


def _same(word: str, wanted: str) -> bool:
    return word == wanted or word == f"{wanted}s"
