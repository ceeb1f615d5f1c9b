"""Claims whose answer was lost: committed on the server, never seen here.

A claim that raises (the connection dropped, the server restarted as it
committed) may have committed before its answer was lost. Its jobs are
then claimed by this process, which never received them and will not run
them; nothing would give them back while the process lives. So every claim
is stamped with a time no other claim of this process shares (``claiming``;
it is the claim rows' ``created_at``), a claim that raised notes its stamp,
and the worker's loop gives the rows of a noted stamp back to ready once
the database answers again (``ClaimedExecutionQuerySet.release_in_doubt``).
Their bodies cannot have run: no thread ever held them. A claim that did
not commit leaves no rows, and its note costs one query. After the clock
steps back a stamp may repeat an older one; the claims this process's
threads hold are never given back (the worker passes them as ``keep``).

The stamp is also the attempt's start, so the dialect takes it only once
the claim holds its rows (``Stamp``): after the lock of SQLite's IMMEDIATE
transaction or MySQL's locking read, every job the claim can see was
committed before it, so no job starts before it was enqueued however long
the claim waited for the lock. PostgreSQL claims in one statement: its
stamp is taken just before the statement is sent, and the statement starts
each job no earlier than its enqueue (the claim row keeps the stamp).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.utils import timezone

_lock = threading.Lock()
_last: datetime | None = None
# (database alias, process id, stamp) of claims that raised.
_noted: set[tuple[str, int, datetime]] = set()
# How far a stamp may run ahead of the clock to stay unique: claims in the
# same microsecond. A clock stepped back further (NTP, a skewed test) is
# followed at once: the stamp is also the claim's and the attempt's start,
# which must stay true.
_SKEW = timedelta(milliseconds=1)
_TICK = timedelta(microseconds=1)


def _stamp() -> datetime:
    """Now, or just after the last stamp if the clock has not passed it
    (by at most ``_SKEW``): unique per process while the clock runs on."""
    global _last
    with _lock:
        now = timezone.now()
        if _last is not None and _last - _SKEW < now <= _last:
            now = _last + _TICK
        _last = now
        return now


class Stamp:
    """One claim's stamp, taken on the first call and the same after it.

    The dialect calls it when the claim holds its rows. A claim that never
    called it wrote no row with it.
    """

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: datetime | None = None

    def __call__(self) -> datetime:
        if self.value is None:
            self.value = _stamp()
        return self.value


@contextmanager
def claiming(using: str, process_id: int | None) -> Iterator[Stamp]:
    """The stamp of one claim; noted if the claim raises after taking it.

    A claim without a process (tests, tools) is not noted: nothing but its
    caller could give it back.
    """
    stamp = Stamp()
    try:
        yield stamp
    except BaseException:
        if process_id is not None and stamp.value is not None:
            with _lock:
                _noted.add((using, process_id, stamp.value))
        raise


def noted(using: str, process_id: int) -> list[datetime]:
    """The stamps of ``process_id``'s claims that raised, oldest first."""
    with _lock:
        return sorted(s for u, p, s in _noted if (u, p) == (using, process_id))


def forget(using: str, process_id: int, stamp: datetime) -> None:
    with _lock:
        _noted.discard((using, process_id, stamp))
