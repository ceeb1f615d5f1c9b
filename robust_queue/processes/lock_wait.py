"""A bounded wait for row locks, for a process that must stay responsive.

The supervisor reaps, replaces and stops children from one loop; a
statement of it that waits on a row lock another session holds (the claim
of a dead child, say) would stall all of that for InnoDB's 50 s, or for
ever on PostgreSQL. Inside ``bounded_lock_wait`` such a statement fails
after ``seconds`` instead, with an error ``Dialect.lock_conflict``
recognises, and the caller tries again later.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from ..models.sql import dialect_for


def bounded_lock_wait(using: str, seconds: int) -> AbstractContextManager[None]:
    """Row-lock waits inside last at most ``seconds`` (SQLite: no change)."""
    return dialect_for(using).lock_wait(seconds)
