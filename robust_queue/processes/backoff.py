"""How long an idle worker sleeps between polls.

Each poll that claims nothing doubles the pause, from the polling interval
up to a ceiling; a claim or a wake-up (NOTIFY) starts again from the
polling interval. A busy worker therefore polls as often as configured,
and an idle fleet costs the database a few statements a second.
"""

from __future__ import annotations

from ..backoff import exponential


class IdleBackoff:
    def __init__(self, base: float, ceiling: float) -> None:
        self.base = base
        self.ceiling = max(ceiling, base)
        self._misses = 0

    def reset(self) -> None:
        """Work came (or may have come): poll at the base interval again.

        Called from other threads too: one assignment, no lock needed.
        """
        self._misses = 0

    def next_pause(self) -> float:
        """The pause after a poll that claimed nothing."""
        pause = exponential(self.base, self._misses + 1, self.ceiling)
        self._misses += 1
        return pause
