"""Exponential back-off: the one formula every retry loop uses.

A pause doubles with each try that failed, up to a ceiling; with jitter it
is a random share of that, so that clients that collided (a deadlock) do
not collide again on the same beat.
"""

from __future__ import annotations

import random

# 2 ** 32 times any base is past every ceiling; a larger exponent only
# risks an OverflowError in a loop that has run for very long.
_MAX_DOUBLINGS = 32


def exponential(base: float, attempt: int, ceiling: float, *, jitter: bool = False) -> float:
    """The pause after try ``attempt`` (1 first) failed: ``base``, then
    doubled for each later try, at most ``ceiling``; with ``jitter`` a
    uniform draw between 0 and that."""
    doublings = min(max(attempt - 1, 0), _MAX_DOUBLINGS)
    pause = min(base * 2.0**doublings, ceiling)
    return random.uniform(0, pause) if jitter else pause
