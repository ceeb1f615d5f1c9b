"""Hiding secrets wherever a value is shown: the admin, logs, metrics.

``mask(value)`` is the one function every place that shows a value goes
through. A string is masked as free text (``text.py``): values of a known
shape (``shapes.py``: API keys, bearer tokens, JWTs, PEM private keys,
passwords in URLs) and values written next to a secret name
(``token=...``). A dict hides the value of every key whose name is secret
(``names.py``) and masks the others; lists are masked item by item.

The rules are read from settings at each call (``rules()``):

- ``ROBUST_QUEUE["admin_mask"]``: the secret names (default in
  ``conf.ADMIN_MASK``), or a callable for the admin's arguments (names are
  then the default ones); ``[]`` or None turns the built-in names and
  shapes off;
- ``ROBUST_QUEUE["mask_names"]``: more names; ``["mask_values"]``: more
  shapes (regular expressions).

A leaf above ``conf``: the core's logs (``logs.py``) use it, and the
admin adds what only it knows (a task's positional parameter names).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from .. import conf
from .names import Pattern, name_matches
from .shapes import default_shapes
from .text import MASK, mask_text

T = TypeVar("T")

DEFAULT_NAMES: tuple[str, ...] = conf.ADMIN_MASK.default

__all__ = ["DEFAULT_NAMES", "MASK", "Pattern", "Rules", "mask", "rules"]


@dataclass(frozen=True, slots=True)
class Rules:
    """Which names and which value shapes are secret."""

    names: tuple[Pattern, ...]
    shapes: tuple[re.Pattern[str], ...]

    @property
    def is_on(self) -> bool:
        return bool(self.names or self.shapes)

    def is_secret_name(self, name: Any) -> bool:
        return isinstance(name, str) and name_matches(name, self.names)

    def text(self, text: str, secrets: Iterable[str] = ()) -> str:
        """``text`` masked, ``secrets`` (known secret values) included."""
        return mask_text(text, self.names, self.shapes, secrets) if self.is_on else text


def rules() -> Rules:
    """The rules the settings give (read now: ``override_settings`` works)."""
    chosen = conf.get(conf.ADMIN_MASK)
    extra_names = conf.get(conf.MASK_NAMES)
    extra_shapes = conf.get(conf.MASK_VALUES)
    if callable(chosen) or isinstance(chosen, str):
        names: tuple[Pattern, ...] = DEFAULT_NAMES
    elif chosen:
        # A pattern of any other type (a typo in settings) counts as "mask
        # every name": hiding too much beats a page that fails.
        names = tuple(p if isinstance(p, (str, re.Pattern)) else "" for p in chosen if p)
    else:
        return Rules(tuple(extra_names), tuple(extra_shapes))
    return Rules((*names, *extra_names), (*default_shapes(), *extra_shapes))


def mask(value: T, secrets: Iterable[str] = (), *, using: Rules | None = None) -> T:
    """``value`` as it may be shown: see the module docstring.

    ``secrets``: values known to be secret (hidden wherever they appear in
    text); ``using``: rules already read (one ``rules()`` per page).
    """
    chosen = using if using is not None else rules()
    if not chosen.is_on:
        return value
    return cast(T, _masked(value, chosen, frozenset(secrets)))


def _masked(value: Any, chosen: Rules, secrets: frozenset[str]) -> Any:
    if isinstance(value, str):
        return chosen.text(value, secrets)
    if isinstance(value, dict):
        return {
            key: MASK if chosen.is_secret_name(key) else _masked(item, chosen, secrets)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_masked(item, chosen, secrets) for item in value]
    if isinstance(value, tuple):
        return tuple(_masked(item, chosen, secrets) for item in value)
    return value
