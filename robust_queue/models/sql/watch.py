"""An idle worker's listener where the server has no LISTEN: it looks at
the newest ready row's id every few milliseconds, and a newer one than it
saw before wakes the worker.

Ready rows take ever larger ids, so a larger newest id means a job became
ready since the last look; a claim or a delete only makes it smaller, and
is not heard. Two jobs committed out of id order can hide the later
commit: the worker, woken by the first, claims at full pace until the
queue is empty and finds it. Polling stays the correctness path.
"""

from __future__ import annotations

from collections.abc import Callable
from threading import Event

from . import query_log


def watch_newest_ready(
    stop: Event,
    on_notify: Callable[[], None],
    on_listening: Callable[[], None],
    newest: Callable[[], int | None],
    every: float,
    changed: Callable[[], bool] | None = None,
) -> None:
    """Call ``on_notify`` whenever ``newest()`` (the newest ready row's id,
    None for none) is larger than at the look before, until ``stop``.

    ``changed``, if given, is asked first at each look: False means the
    database has not changed since, and ``newest`` is not read.
    """
    seen = newest()
    on_listening()
    while not stop.wait(every):
        query_log.forget()
        if changed is not None and not changed():
            continue
        latest = newest()
        if latest is not None and (seen is None or latest > seen):
            on_notify()
        seen = latest
