"""The values a mask hid, so free text can hide them as well."""

from __future__ import annotations

import re
from typing import Any

from ...masking import MASK

_SCALARS = (str, int, float)


def masked_values(original: Any, masked: Any) -> set[str]:
    """The text of every scalar of ``original`` that ``masked`` hides.

    Where the two differ in shape (a callable rule rebuilt the data), every
    scalar of ``original`` below that point counts as hidden.
    """
    if masked == MASK and original != MASK:
        return _scalars(original)
    if isinstance(original, dict) and isinstance(masked, dict):
        found: set[str] = set()
        for key, value in original.items():
            found |= masked_values(value, masked[key]) if key in masked else _scalars(value)
        return found
    if isinstance(original, list) and isinstance(masked, list):
        if len(original) != len(masked):
            return _scalars(original)
        found = set()
        for value, shown in zip(original, masked, strict=True):
            found |= masked_values(value, shown)
        return found
    if isinstance(original, str) and isinstance(masked, str) and original != masked:
        return _hidden_parts(original, masked)
    if original != masked:
        return _scalars(original)
    return set()


def _hidden_parts(original: str, masked: str) -> set[str]:
    """The parts of ``original`` that text masking turned into ``MASK``:
    "said token=abc rejected" shown as "said token=******** rejected"
    hides "abc", not the whole message."""
    kept = masked.split(MASK)
    pattern = "(.+?)".join(re.escape(part) for part in kept)
    match = re.fullmatch(pattern, original, re.DOTALL)
    return set(match.groups()) if match else {original}


def _scalars(value: Any) -> set[str]:
    if isinstance(value, bool) or value is None:
        return set()
    if isinstance(value, _SCALARS):
        return {str(value)}
    if isinstance(value, dict):
        return {text for item in value.values() for text in _scalars(item)}
    if isinstance(value, list):
        return {text for item in value for text in _scalars(item)}
    return set()
