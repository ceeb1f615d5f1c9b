"""Tasks whose arguments (and one's return value) are stored encrypted
(``@encrypted``), for the tests of encryption at rest. Imported by those
tests and listed in ``task_modules`` for the supervisors they start."""

from __future__ import annotations

import robust_queue
from robust_queue.compat import task

from .models import LedgerEntry


@robust_queue.encrypted
@task()
def record_card(card: str, *, amount: int) -> str:
    """Records that it ran with the card it was given; returns a receipt."""
    LedgerEntry.objects.create(key=f"{card}:{amount}")
    return f"charged {amount} to {card}"


@robust_queue.encrypted(result=True)
@robust_queue.unique()
@task()
def lookup_secret(name: str) -> dict[str, str]:
    """Returns a value as secret as its argument (stored encrypted too)."""
    LedgerEntry.objects.create(key=f"looked up {name}")
    return {"secret": f"value of {name}"}


@task(encrypted={"result": True})
def declared_by_keyword(note: str) -> str:
    """@task(encrypted=...) is @encrypted(...)."""
    return note.upper()
