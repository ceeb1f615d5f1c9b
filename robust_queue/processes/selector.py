"""Which queues a worker claims from, in order (DESIGN §6).

Exact names are polled in the order given; ``*`` alone (nothing paused) is
one unfiltered query; ``prefix*`` expands to existing queues; paused queues
are skipped. Pauses and queue names are cached for ``CACHE_SECONDS``.
With a rotating ``order`` (``queue_order.py``) each ``plan()`` is one claim
round and starts at the next queue; ``*`` then expands to queue names too.

Task pauses come with queue pauses in the same read; the claim checks both
again in its own snapshot (``ReadyExecution.objects.claim``), so a stale
cache never lets a paused queue's or task's job through.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from collections.abc import Set as AbstractSet

from django.db.models import CharField, Value

from ..models import Pause, ReadyExecution, TaskPause
from . import queue_caps
from .queue_order import DEFAULT_ORDER, Rotation

CACHE_SECONDS = 1.0

# One claim query: a queue name (None = every queue) and queues to skip.
Plan = list[tuple[str | None, tuple[str, ...]]]


class QueueSelector:
    def __init__(
        self,
        selectors: tuple[str, ...],
        *,
        using: str,
        order: str = DEFAULT_ORDER,
        weights: Mapping[str, int] | None = None,
    ) -> None:
        self.selectors = selectors
        self.using = using
        self.rotation = Rotation(order, weights)
        self._cached_at = float("-inf")
        self._paused: set[str] = set()
        self._names: list[str] = []
        self._paused_tasks: tuple[str, ...] = ()
        self._caps: dict[str, int] = {}
        self._waiting: set[str] = set()

    def plan(self) -> Plan:
        """This claim round's queries, in order."""
        self._refresh()
        expand = self.rotation.rotates
        plan = plan_for(self.selectors, self._names, self._paused, set(self._caps), expand)
        if self._caps:
            # A capped queue that had no ready job at the last read costs
            # no claim (each would probe it) until the next read.
            plan = [(q, e) for q, e in plan if q not in self._caps or q in self._waiting]
        if not expand:
            return plan
        # Expanded: one query per queue name, none unfiltered.
        return [(name, ()) for name in self.rotation.next([q for q, _ in plan if q])]

    @property
    def caps(self) -> dict[str, int]:
        """Capped queue name -> max_concurrency, as of the last read."""
        return self._caps

    @property
    def paused_tasks(self) -> tuple[str, ...]:
        """The task pauses of the last read (``plan()`` reads them)."""
        return self._paused_tasks

    def _refresh(self) -> None:
        now = time.monotonic()
        if now - self._cached_at < CACHE_SECONDS:
            return
        self._paused, self._paused_tasks = _pauses(self.using)
        self._caps = queue_caps.caps()
        ready = ReadyExecution.objects.using(self.using)
        self._waiting = {q for q in self._caps if ready.filter(queue_name=q).exists()}
        # "*" alone needs no names (one unfiltered query) unless it rotates.
        alone = self.selectors == ("*",) and not self.rotation.rotates
        if not alone and any(s.endswith("*") for s in self.selectors):
            self._names = ReadyExecution.objects.using(self.using).queue_names()
        self._cached_at = now


def _pauses(using: str) -> tuple[set[str], tuple[str, ...]]:
    """Paused queues and paused tasks, in one query."""
    kind: CharField[str, str] = CharField(max_length=1)
    queues = Pause.objects.using(using).annotate(kind=Value("q", kind))
    tasks = TaskPause.objects.using(using).annotate(kind=Value("t", kind))
    rows = queues.values_list("queue_name", "kind").union(
        tasks.values_list("task_path", "kind"), all=True
    )
    paused: set[str] = set()
    paused_tasks: list[str] = []
    for name, row_kind in rows:
        if row_kind == "q":
            paused.add(name)
        else:
            paused_tasks.append(name)
    return paused, tuple(sorted(paused_tasks))


def plan_for(
    selectors: tuple[str, ...],
    names: list[str],
    paused: set[str],
    capped: AbstractSet[str] = frozenset(),
    expand: bool = False,
) -> Plan:
    """The claim queries for ``selectors``, given existing, paused and
    capped queues; ``expand``: ``*`` alone names queues too."""
    if selectors == ("*",) and not expand:
        first: Plan = [(name, ()) for name in sorted(capped - paused)]
        return [*first, (None, tuple(sorted(paused | capped)))]
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
