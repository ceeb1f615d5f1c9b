"""Django's query log, kept to one round of work in a long-running thread.

With ``DEBUG`` on, Django keeps the text of every query a connection runs
(``connection.queries_log``, up to 9,000 per connection) and empties it as
each request starts. A worker's threads serve no request: without this,
each of their connections would keep its last 9,000 queries for the
process's life. A batched finish logs about 2.7 KiB, so a worker under
``DEBUG`` grew by tens of MiB (the demo runs with it on). Each thread's
loop calls ``forget()`` as it starts a round (a job, a batch of finishes,
a heartbeat, a look for new ready rows, a watchdog tick, a round of a
process's loop), as a request would: the log then holds the round's own
queries.
"""

from __future__ import annotations

from django.conf import settings
from django.db import reset_queries


def forget() -> None:
    """Empty the query log of this thread's connections; there is one only
    under ``DEBUG`` (a test's query capture, which sets no ``DEBUG``, is
    left alone)."""
    if settings.DEBUG:
        reset_queries()
