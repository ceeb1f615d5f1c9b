"""The values a mask hid, so free text can hide them as well."""

from __future__ import annotations

from typing import Any

from .text_masking import MASK

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
    if original != masked:
        return _scalars(original)
    return set()


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
