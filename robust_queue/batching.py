"""Working through many rows a batch at a time, each batch short-lived.

Long deletes and bulk operations run as many small transactions so that
they never hold many locks, nor one lock for long.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from django.db.models import QuerySet


def drain(batch: Callable[[], int], size: int) -> int:
    """Run ``batch`` until it handles fewer than ``size`` rows; the total.

    ``batch`` does one batch (typically one transaction) of at most
    ``size`` rows and returns how many it handled.
    """
    total = 0
    while True:
        handled = batch()
        total += handled
        if handled < size:
            return total


def id_batches(rows: QuerySet[Any], size: int) -> Iterator[list[int]]:
    """The primary keys of ``rows`` in ascending batches of ``size``.

    Each batch is read when it is asked for, after the last key of the
    one before (keyset paging): rows that the caller deleted or changed
    meanwhile do not shift the next batch.
    """
    ids = rows.order_by("pk").values_list("pk", flat=True)
    last = None
    while True:
        page = ids if last is None else ids.filter(pk__gt=last)
        batch = list(page[:size])
        if not batch:
            return
        yield batch
        last = batch[-1]
