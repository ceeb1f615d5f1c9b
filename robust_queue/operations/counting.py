"""Counts that never scan a big table: exact up to a cap, then a figure
that says what it is.

Past the cap a count is, in order of preference: a running total from
the statistics (``from_statistics``), the database planner's estimate of
the same query (PostgreSQL: ``EXPLAIN``'s row estimate; ``estimated``),
or nothing more than "more than 10,000" (MariaDB, SQLite). Pages show the
first two with "≈" and say where they come from (``CappedCount.source``).
"""

from __future__ import annotations

from typing import Any

from django.db import connections
from django.db.models import Count, Max, QuerySet
from django.utils import formats

from ..models.sql import own_table
from ..models.sql.estimates import estimated_rows

DEFAULT_COUNT_CAP = 10_000
# Where a figure past the cap comes from (CappedCount.source).
PLANNER = "planner"
STATISTICS = "statistics"
SOURCES = {
    PLANNER: "the database planner's estimate",
    STATISTICS: "the statistics workers record per minute",
}


class CappedCount(int):
    """A count that stopped at its cap.

    ``str()`` is compact ("10,000+", for commands and logs); in a template
    (``__html__``, ``shown``) it says what it is: the exact count, "≈N"
    with an estimate or a running total past the cap, else "more than N".
    """

    cap: int
    estimate: int | None
    source: str

    def __new__(
        cls, value: int, cap: int, estimate: int | None = None, source: str = ""
    ) -> CappedCount:
        count = super().__new__(cls, value)
        count.cap = cap
        # Never below what was counted: past the cap, at least cap + 1.
        known = estimate is not None and int(value) > cap and estimate > cap
        count.estimate = int(estimate) if known and estimate is not None else None
        count.source = source if count.estimate is not None else ""
        return count

    @property
    def is_capped(self) -> bool:
        return int(self) > self.cap

    @property
    def is_estimated(self) -> bool:
        return self.estimate is not None

    @property
    def cap_shown(self) -> str:
        return _grouped(self.cap)

    @property
    def shown(self) -> str:
        """ "12", "≈1,200,000" or "more than 10,000"."""
        if not self.is_capped:
            return _grouped(int(self))
        if self.estimate is not None:
            return f"≈{_grouped(_rounded(self.estimate))}"
        return f"more than {self.cap_shown}"

    @property
    def explained(self) -> str:
        """What the figure is, for a title or a note; "" when exact."""
        if not self.is_capped:
            return ""
        if self.estimate is not None:
            return f"Counted exactly up to {self.cap_shown}; past it, {SOURCES[self.source]}."
        return f"Counting stops at {self.cap_shown} so that the page never reads a whole table."

    def __str__(self) -> str:
        value = self.cap if self.is_capped else int(self)
        shown = formats.number_format(value, force_grouping=True)
        return f"{shown}+" if self.is_capped else shown

    def __html__(self) -> str:
        return self.shown


def capped_count(
    queryset: QuerySet[Any], cap: int = DEFAULT_COUNT_CAP, *, estimate: bool = False
) -> CappedCount:
    """``COUNT(*)`` over at most ``cap + 1`` rows of ``queryset``; past the
    cap, with ``estimate``, the planner's estimate of all its rows (where
    the database gives one)."""
    count = _count_up_to(queryset, cap + 1)
    if count <= cap or not estimate:
        return CappedCount(count, cap)
    return CappedCount(count, cap, estimated(queryset), PLANNER)


def capped_count_and_top(queryset: QuerySet[Any], cap: int) -> tuple[CappedCount, int]:
    """The count of ``queryset``'s jobs up to ``cap`` and the highest job
    id among them, read by one statement (so the two agree), with no bound
    on the id that would make MariaDB read its rows through the clustered
    primary key (a million jobs: 1.2-1.5 s against 0.7-0.9 s). Past the
    cap, the highest id of all its jobs (a second statement)."""
    most = cap + 1
    own = own_table.rows_sql(queryset, job_id=True)
    if own is None:
        rows = queryset.order_by().values("pk")[:most]
        figures = rows.aggregate(count=Count("pk"), top=Max("pk"))
        count, top = figures["count"], figures["top"]
    else:
        sql, params = own
        with connections[queryset.db].cursor() as cursor:
            cursor.execute(
                f"SELECT COUNT(*), MAX(rq_job_id) FROM ({sql} LIMIT %s) rq_rows", [*params, most]
            )
            count, top = cursor.fetchone()
    if count > cap:
        top = queryset.order_by("-pk").values_list("pk", flat=True).first()
    return CappedCount(int(count), cap), int(top or 0)


def _count_up_to(queryset: QuerySet[Any], most: int) -> int:
    """How many rows ``queryset`` has, reading at most ``most``: from the
    one execution table its filter names where it names no other
    (``own_table``), else through the query itself."""
    own = own_table.rows_sql(queryset)
    if own is None:
        return int(queryset.order_by().values("pk")[:most].count())
    sql, params = own
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM ({sql} LIMIT %s) rq_rows", [*params, most])
        return int(cursor.fetchone()[0])


def estimated(queryset: QuerySet[Any]) -> int | None:
    """The planner's estimate of how many rows ``queryset`` has (the
    ``EXPLAIN`` of its rows query); None where the database gives none."""
    sql, params = queryset.order_by().values("pk").query.sql_with_params()
    return estimated_rows(queryset.db, sql, params)


def from_statistics(count: CappedCount, total: int | None) -> CappedCount:
    """``count`` past its cap given a running ``total`` from the statistics."""
    if not count.is_capped or total is None:
        return count
    return CappedCount(int(count), count.cap, total, STATISTICS)


def _rounded(value: int) -> int:
    """Two significant figures: an estimate claims no more."""
    digits = len(str(abs(value)))
    return round(value, -(digits - 2)) if digits > 2 else value


def _grouped(value: int) -> str:
    return formats.number_format(value, force_grouping=True)
