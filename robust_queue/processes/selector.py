"""Which queues a worker claims from, in order (DESIGN §6).

Exact names are polled in the order given; ``*`` alone (nothing paused) is
one unfiltered query; ``prefix*`` expands to existing queues; paused queues
are skipped. Pauses and queue names are cached for ``CACHE_SECONDS``.
"""

from __future__ import annotations

import time

from ..models import Pause, ReadyExecution

CACHE_SECONDS = 1.0

# One claim query: a queue name (None = every queue) and queues to skip.
Plan = list[tuple[str | None, tuple[str, ...]]]


class QueueSelector:
    def __init__(self, selectors: tuple[str, ...], *, using: str) -> None:
        self.selectors = selectors
        self.using = using
        self._cached_at = float("-inf")
        self._paused: set[str] = set()
        self._names: list[str] = []

    def plan(self) -> Plan:
        self._refresh()
        return plan_for(self.selectors, self._names, self._paused)

    def _refresh(self) -> None:
        now = time.monotonic()
        if now - self._cached_at < CACHE_SECONDS:
            return
        pauses = Pause.objects.using(self.using).values_list("queue_name", flat=True)
        self._paused = set(pauses)
        # "*" alone needs no names: it is one unfiltered query.
        if self.selectors != ("*",) and any(s.endswith("*") for s in self.selectors):
            self._names = ReadyExecution.objects.using(self.using).queue_names()
        self._cached_at = now


def plan_for(
    selectors: tuple[str, ...], names: list[str], paused: set[str]
) -> Plan:
    """The claim queries for ``selectors``, given existing and paused queues."""
    if selectors == ("*",):
        return [(None, tuple(sorted(paused)))]
    ordered: list[str] = []
    for selector in selectors:
        for name in _expand(selector, names):
            if name not in ordered and name not in paused:
                ordered.append(name)
    return [(name, ()) for name in ordered]


def _expand(selector: str, names: list[str]) -> list[str]:
    if not selector.endswith("*"):
        return [selector]
    prefix = selector[:-1]
    return [name for name in names if name.startswith(prefix)]
