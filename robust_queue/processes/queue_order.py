"""Fair polling: where each claim round of a worker starts (DESIGN §6).

A worker entry's ``order``:

- ``"strict"`` (the default): the queues in the order given, every round.
  The first queue that has jobs can starve the others.
- ``"round_robin"``: each claim round starts at the next queue and goes on
  in the order given (qless's round-robin popping). Under a flood on one
  queue, every other queue with jobs starts one round in N (N queues).
- ``"weighted"``: each round starts at the queue that smooth weighted
  round robin picks (nginx's): over any run of rounds, a queue starts
  ``weight / total`` of them, spread evenly; the others follow by how much
  they are owed. A queue ``weights`` does not name weighs ``1``.

A round claims from its first queue up to the worker's idle threads and
fills what is left from the next ones, as ``strict`` does. With the
rotating orders a ``*`` or ``prefix*`` selector expands to the queue names
that have ready jobs (re-read every second).

A leaf: nothing here reads settings or models.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..options.validation import QUEUE_NAME_RULE, is_valid_queue_name

ORDERS = ("strict", "round_robin", "weighted")
DEFAULT_ORDER = "strict"
DEFAULT_WEIGHT = 1


def order_problems(order: Any, weights: Any, queues: tuple[str, ...]) -> list[str]:
    """What is wrong with a worker entry's ``order`` and ``weights``."""
    if order not in ORDERS:
        return [f"worker order must be one of {', '.join(map(repr, ORDERS))}, not {order!r}"]
    if order != "weighted":
        if weights is not None:
            return [f"worker weights need order 'weighted', not {order!r}"]
        return []
    if not isinstance(weights, Mapping) or not weights:
        return [
            "worker order 'weighted' needs weights: a dict of queue name -> "
            f"whole number >= 1, not {weights!r}"
        ]
    problems = []
    for name, weight in weights.items():
        problems += _weight_problems(name, weight, queues)
    return problems


def _weight_problems(name: Any, weight: Any, queues: tuple[str, ...]) -> list[str]:
    if not is_valid_queue_name(name):
        return [f"worker weights name {name!r}: a queue name is {QUEUE_NAME_RULE}"]
    problems = []
    if isinstance(weight, bool) or not isinstance(weight, int) or weight < 1:
        problems.append(f"worker weights[{name!r}] must be a whole number >= 1, not {weight!r}")
    if not any(isinstance(s, str) and _selects(s, name) for s in queues):
        problems.append(
            f"worker weights name queue {name!r}, which the worker's queues "
            f"{list(queues)!r} do not select"
        )
    return problems


def _selects(selector: str, name: str) -> bool:
    if selector.endswith("*"):
        return name.startswith(selector[:-1])
    return selector == name


class Rotation:
    """The order of one worker's queues, turned once per claim round."""

    def __init__(
        self, order: str = DEFAULT_ORDER, weights: Mapping[str, int] | None = None
    ) -> None:
        self.order = order
        self.weights = dict(weights or {})
        self._round = 0
        # Smooth weighted round robin: what each queue is owed.
        self._owed: dict[str, int] = {}

    @property
    def rotates(self) -> bool:
        return self.order != "strict"

    def next(self, names: list[str]) -> list[str]:
        """``names`` (in the order given) as this round polls them."""
        if not self.rotates or len(names) < 2:
            return names
        if self.order == "round_robin":
            start = self._round % len(names)
            self._round += 1
            return names[start:] + names[:start]
        return self._weighted(names)

    def _weighted(self, names: list[str]) -> list[str]:
        owed = {name: self._owed.get(name, 0) for name in names}
        for name in names:
            owed[name] += self.weights.get(name, DEFAULT_WEIGHT)
        total = sum(self.weights.get(name, DEFAULT_WEIGHT) for name in names)
        # Stable: ties keep the order given.
        ranked = sorted(names, key=lambda name: -owed[name])
        owed[ranked[0]] -= total
        # A queue out of the plan (paused, empty) starts afresh when back.
        self._owed = owed
        return ranked
