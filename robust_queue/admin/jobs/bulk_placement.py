"""Where a large bulk operation runs, and when: the queue and priority of
its job (``bulk_task.py``), and the sentence the confirmation page and
the message after it say.

A worker claims the highest priority first, so the job goes at the top
priority on a queue a live worker serves (and that is not paused):
``default`` when one serves it, else the served queue with the fewest
jobs ahead of it. Ahead of it, for a worker, are the ready jobs it would
claim first: all those on the queues its selectors poll before that one
(exact names and ``prefix*`` in order; ``*`` alone is one query by
priority), and the top-priority jobs already on it; a worker whose
``order`` rotates may take fewer first. With no live worker to read, the
queue is chosen from the workers this site's settings configure, and the
page says the operation runs when a worker that serves it starts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Q

from ...compat import DEFAULT_TASK_QUEUE_NAME, TASK_MAX_PRIORITY
from ...exceptions import ConfigurationError
from ...models import Pause, ReadyExecution
from ...models.clock import database_now
from ...operations import queue_names
from ...operations.counting import CappedCount, capped_count
from ...operations.queues import Worker, live_workers
from ...options.validation import is_valid_queue_name
from ...processes.config import SupervisorConfig
from ...processes.selector import plan_for

PRIORITY = TASK_MAX_PRIORITY
# "N jobs ahead" stops counting here ("10,000+").
AHEAD_CAP = 10_000
# At most this many queues are weighed.
CANDIDATES = 20


@dataclass(frozen=True)
class Placement:
    queue: str
    # Jobs a live worker claims before it; None: no live worker claims it now.
    ahead: CappedCount | None
    # Whether any worker is live at all.
    live: bool = True
    # Whether a live worker's selectors name the queue (paused or not).
    served: bool = True
    # Whether every thread of the workers serving the queue is busy.
    busy: bool = False
    paused: bool = False

    @property
    def sentence(self) -> str:
        """When it will run, in a sentence or two."""
        queue = repr(self.queue)
        if self.ahead is not None:
            sentence = f"It runs next on queue {queue}: {self.ahead} job(s) ahead of it."
            if self.busy:
                sentence += (
                    " Every thread of the workers serving it is busy: it starts when one is free."
                )
            return sentence
        if not self.live:
            sentence = (
                f"No worker is running: it will run first on queue {queue} "
                "when one that serves it starts."
            )
        elif self.served:
            return f"Queue {queue} is paused: it will run first there when the queue is resumed."
        else:
            sentence = (
                f"No running worker serves queue {queue}: it will run first there when one starts."
            )
        return sentence + (" The queue is paused: resume it too." if self.paused else "")


def place(using: str, allowed: Iterable[str] = ()) -> Placement:
    """Where the operation's job goes now; ``allowed``: the queues its
    backend accepts (none: any)."""
    allowed = set(allowed)
    workers = live_workers(using, database_now(using))
    paused = set(Pause.objects.using(using).values_list("queue_name", flat=True))
    names = sorted(queue_names.ready(using))
    candidates = _candidates([w.selectors for w in workers], names, allowed)
    best: tuple[int, int, str, CappedCount, list[Worker]] | None = None
    for rank, queue in enumerate(candidates):
        serving = [w for w in workers if w.polls(queue)]
        if queue in paused or not serving:
            continue
        ahead = min(
            (_ahead(using, selectors, queue, names, paused) for selectors in _distinct(serving)),
            key=int,
        )
        if best is None or (int(ahead), rank) < best[:2]:
            best = (int(ahead), rank, queue, ahead, serving)
    if best is not None:
        _, _, queue, ahead, serving = best
        threads = sum(w.threads for w in serving)
        busy = bool(threads) and sum(w.busy for w in serving) >= threads
        return Placement(queue, ahead, busy=busy)
    served = [queue for queue in candidates if any(w.polls(queue) for w in workers)]
    if served:  # every one of them paused
        return Placement(served[0], None, paused=True)
    # No live worker to read: the workers these settings configure.
    configured = _candidates(_configured_selectors(), names, allowed) or [DEFAULT_TASK_QUEUE_NAME]
    queue = next((name for name in configured if name not in paused), configured[0])
    return Placement(queue, None, live=bool(workers), served=False, paused=queue in paused)


def _candidates(selectors: list[tuple[str, ...]], names: list[str], allowed: set[str]) -> list[str]:
    """The queues worth weighing, ``default`` first: those the selectors
    name, with the ready queues (or the prefix itself) for ``prefix*`` and
    the ready queues for ``*``."""
    found = [DEFAULT_TASK_QUEUE_NAME]
    for selector in (s for each in selectors for s in each):
        if selector == "*":
            found += names
        elif selector.endswith("*"):
            prefix = selector[:-1]
            found += [name for name in names if name.startswith(prefix)] + [prefix]
        else:
            found.append(selector)
    found += sorted(allowed)
    unique = dict.fromkeys(
        name for name in found if is_valid_queue_name(name) and (not allowed or name in allowed)
    )
    return list(unique)[:CANDIDATES]


def _distinct(workers: list[Worker]) -> list[tuple[str, ...]]:
    return list(dict.fromkeys(w.selectors for w in workers))


def _ahead(
    using: str, selectors: tuple[str, ...], queue: str, names: list[str], paused: set[str]
) -> CappedCount:
    """Ready jobs a worker polling ``selectors`` claims before a new
    top-priority job on ``queue``."""
    top = Q(priority__gte=PRIORITY)
    if selectors == ("*",):
        before = top & ~Q(queue_name__in=paused)
    else:
        # Once the job is written its queue has a ready job: ``prefix*`` finds it.
        plan = [name for name, _ in plan_for(selectors, sorted({*names, queue}), paused)]
        earlier = plan[: plan.index(queue)] if queue in plan else plan
        before = Q(queue_name__in=earlier) | (Q(queue_name=queue) & top)
    return capped_count(ReadyExecution.objects.using(using).filter(before), AHEAD_CAP)


def _configured_selectors() -> list[tuple[str, ...]]:
    """The queue selectors of the workers this site's settings configure."""
    try:
        workers = SupervisorConfig.from_settings().workers
    except (ConfigurationError, TypeError):
        return []
    return [tuple(worker.queues) for worker in workers]
