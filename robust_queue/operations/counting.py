"""Counts that never scan a big table: exact up to a cap, then "N+"."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils import formats

DEFAULT_COUNT_CAP = 10_000


class CappedCount(int):
    """A count that stopped at its cap; renders as ``"10,000+"``."""

    def __new__(cls, value: int, cap: int) -> CappedCount:
        count = super().__new__(cls, value)
        count.cap = cap
        return count

    cap: int

    @property
    def is_capped(self) -> bool:
        return int(self) > self.cap

    def __str__(self) -> str:
        value = self.cap if self.is_capped else int(self)
        shown = formats.number_format(value, force_grouping=True)
        return f"{shown}+" if self.is_capped else shown

    def __html__(self) -> str:
        return str(self)


def capped_count(queryset: QuerySet[Any], cap: int = DEFAULT_COUNT_CAP) -> CappedCount:
    """``COUNT(*)`` over at most ``cap + 1`` rows of ``queryset``."""
    rows = queryset.order_by().values("pk")[: cap + 1]
    return CappedCount(rows.count(), cap)
