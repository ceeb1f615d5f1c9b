"""Deadlocks and lock-wait timeouts: expected events, retried a few times.

InnoDB resolves a deadlock by rolling back one of the transactions in it
(error 1213), and gives up on a lock after ``innodb_lock_wait_timeout``
(1205); PostgreSQL reports a deadlock as SQLSTATE 40P01 and a wait past
``lock_timeout`` as 55P03. None leaves anything half-done: the transaction
that lost is rolled back (by ``atomic``, at the least). A transition
that owns its transaction is simply run again, after a short random pause
so that the transactions that collided do not collide again, and the
event is logged as one line, not a traceback.

Inside a caller's transaction nothing is retried: the database has rolled
back (MySQL) or aborted (PostgreSQL) the caller's work too.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import DatabaseError, connections

from ...backoff import exponential
from . import dialect_for

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_ATTEMPTS = 5
# The first retry waits up to this long; each further one up to twice as
# long as the one before, never more than MAX_DELAY.
BASE_DELAY = 0.02
MAX_DELAY = 0.5


def retry_on_lock_conflict(
    operation: Callable[[], T],
    *,
    using: str,
    what: str,
    attempts: int = DEFAULT_ATTEMPTS,
) -> T:
    """Run ``operation`` (one whole transaction); run it again after a
    deadlock or a lock-wait timeout, up to ``attempts`` times in all.

    The last conflict, any other error and any conflict inside a caller's
    transaction propagate.
    """
    for attempt in range(1, attempts + 1):
        try:
            return operation()
        except DatabaseError as exc:
            kind = dialect_for(using).lock_conflict(exc)
            if kind is None or connections[using].in_atomic_block:
                raise
            if attempt == attempts:
                logger.warning(
                    "%s: %s on %r; gave up after %d attempts", what, kind, using, attempt
                )
                raise
            delay = exponential(BASE_DELAY, attempt, MAX_DELAY, jitter=True)
            logger.warning(
                "%s: %s on %r; retrying in %.0f ms (attempt %d of %d)",
                what,
                kind,
                using,
                delay * 1000,
                attempt + 1,
                attempts,
            )
            time.sleep(delay)
    raise AssertionError("unreachable: the last attempt returns or raises")
