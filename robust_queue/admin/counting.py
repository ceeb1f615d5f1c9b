"""Counts that never scan a big table: exact up to a cap, then "N+"."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.utils.functional import cached_property

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
        return f"{self.cap:,}+" if self.is_capped else f"{int(self):,}"

    def __html__(self) -> str:
        return str(self)


def capped_count(queryset: QuerySet, cap: int = DEFAULT_COUNT_CAP) -> CappedCount:
    """``COUNT(*)`` over at most ``cap + 1`` rows of ``queryset``."""
    rows = queryset.order_by().values("pk")[: cap + 1]
    return CappedCount(rows.count(), cap)


class CappedPaginator(Paginator):
    """A paginator whose count stops at the cap: no full table scan.

    Pages past the cap are not offered; filters narrow the list instead.
    """

    cap = DEFAULT_COUNT_CAP

    @cached_property
    def count(self) -> int:  # type: ignore[override]
        return capped_count(self.object_list, self.cap)  # type: ignore[arg-type]
