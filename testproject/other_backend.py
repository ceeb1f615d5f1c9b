"""A function that tests declare as a task of a backend that is not
Robust Queue (the ``TASKS`` alias exists only inside those tests)."""

from __future__ import annotations


def shout(text: str) -> str:
    return text.upper()
