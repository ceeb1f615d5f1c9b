"""Children that stopped answering: the supervisor's side (which of its
children to end and replace) and the health check's side (what a live
supervisor lacks or holds stuck).

A child that heartbeats no more (a deadlock, the GIL held in C, a swap
storm, SIGSTOP) cannot stop itself. Its row is pruned and its claims are
failed, but the process stays and serves no queue: whoever forked it must
kill it and start another.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..models import Process

if TYPE_CHECKING:
    from .children import Child

# A child whose heartbeat is this many intervals old is reported by
# ``health`` long before it is pruned (``process_alive_threshold``).
LATE_BEATS = 3


class StuckChildren:
    """Finds the children the supervisor must end.

    A child whose row this supervisor pruned is stuck: it is ended at once.
    A child whose row is gone otherwise (pruned by another supervisor,
    deleted by hand) stops itself within a beat and the shutdown timeout;
    one that has not after ``settle`` s is stuck too. The clock is this
    process's own.
    """

    def __init__(self, using: str, settle: float, threshold: float) -> None:
        self.using = using
        self.settle = settle
        self.threshold = threshold
        self._missing_since: dict[int, float] = {}

    def find(self, children: Sequence[Child], pruned: Iterable[Process]) -> list[tuple[Child, str]]:
        """The children to end, each with why."""
        pruned_pks = {process.pk for process in pruned}
        known = {
            pk: child
            for child in children
            if child.unresponsive is None and (pk := child.process_pk()) is not None
        }
        rows = Process.objects.using(self.using).filter(pk__in=list(known))
        present = set(rows.values_list("pk", flat=True))
        now = time.monotonic()
        self._missing_since = {
            pk: self._missing_since.get(pk, now) for pk in known if pk not in present
        }
        stuck = []
        for pk, child in known.items():
            if pk in pruned_pks:
                stuck.append((child, f"no heartbeat for over {self.threshold:g}s; pruned"))
            elif pk in self._missing_since and now - self._missing_since[pk] >= self.settle:
                why = f"its process row was removed and it did not stop within {self.settle:g}s"
                stuck.append((child, why))
        return stuck


def supervision_metadata(workers: int, dispatchers: int, interval: float) -> dict[str, Any]:
    """What a supervisor records in its row for ``health`` to compare with
    its live children (a scheduler starts only with recurring tasks)."""
    return {
        "heartbeat_interval": interval,
        "children": {"worker": workers, "dispatcher": dispatchers},
    }


def problems(supervisor: Process, children: Sequence[Process], interval: float) -> list[str]:
    """What ``supervisor`` (alive) lacks: each late child (its heartbeat
    older than ``LATE_BEATS`` intervals) and each role it runs fewer of than
    configured. ``children`` carry ``heartbeat_age`` (``with_liveness``);
    ``interval`` is used when the row does not say its own."""
    metadata = supervisor.metadata if isinstance(supervisor.metadata, dict) else {}
    beat = metadata.get("heartbeat_interval")
    late_after = LATE_BEATS * (beat if isinstance(beat, int | float) else interval)
    found = [
        f"{child.kind} {child.name} (pid {child.pid}) has not heartbeaten for "
        f"{_age(child):.0f}s: stuck? its supervisor kills and replaces it once it is pruned"
        for child in children
        if _age(child) > late_after
    ]
    expected = metadata.get("children")
    for kind, count in expected.items() if isinstance(expected, dict) else []:
        running = sum(1 for child in children if child.kind == kind)
        if isinstance(count, int) and running < count:
            found.append(
                f"supervisor {supervisor.name} (pid {supervisor.pid}) runs {running} of "
                f"its {count} {kind}(s)"
            )
    return found


def _age(child: Process) -> float:
    """Seconds since its last heartbeat, on the database's clock."""
    age = getattr(child, "heartbeat_age", None)
    return age.total_seconds() if isinstance(age, timedelta) else 0.0
