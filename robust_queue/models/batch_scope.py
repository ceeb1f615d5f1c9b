"""The batch that enqueues join (``robust_queue.batch``): a context
variable set by ``Batch.open()`` and read by the backend at enqueue.

A leaf: nothing here imports the models or the backend.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Scope:
    """The open batch: its row id and its backend."""

    batch_pk: int
    backend_alias: str


_CURRENT: ContextVar[Scope | None] = ContextVar("robust_queue_batch", default=None)


def current() -> Scope | None:
    """The batch enqueues join now, if any."""
    return _CURRENT.get()


@contextmanager
def joined(scope: Scope) -> Iterator[Scope]:
    """Enqueues inside the block join ``scope``'s batch."""
    token = _CURRENT.set(scope)
    try:
        yield scope
    finally:
        _CURRENT.reset(token)
