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
from django.db.models import Count, F, Max, QuerySet
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


# Running jobs a count takes away (``capped_count_and_top``'s ``less``)
# beyond those there were a moment before it: the count reads this many
# more rows, so that it still knows whether the rest pass the cap.
LESS_SLACK = 1_000


def capped_count_and_top(
    queryset: QuerySet[Any], cap: int, less: QuerySet[Any] | None = None
) -> tuple[CappedCount, int]:
    """The count of ``queryset``'s jobs up to ``cap`` and the highest job
    id among them, read by one statement (so the two agree), with no bound
    on the id that would make MariaDB read its rows through the clustered
    primary key (a million jobs: 1.2-1.5 s against 0.7-0.9 s). Past the
    cap, the highest id of all its jobs (a second statement).

    ``less``: a few of ``queryset``'s jobs (its running ones) not to
    count, counted apart in the same statement and taken away, so that the
    many are read without testing each against them (MariaDB, a million
    jobs: 0.9-1.4 s tested, 0.3-0.4 s not). The top may be one of them."""
    if less is not None:
        return _count_less(queryset, less, cap)
    most = cap + 1
    own = own_table.rows_sql(queryset, job_id=True)
    if own is None:
        rows = queryset.order_by().values("pk")[:most]
        figures = rows.aggregate(count=Count("pk"), top=Max("pk"))
        count, top = figures["count"], figures["top"]
    else:
        count, top = _one_row(queryset, "COUNT(*), MAX(rq_job_id)", own, most)
    if count > cap:
        top = _top(queryset)
    return CappedCount(int(count), cap), int(top or 0)


def _count_less(queryset: QuerySet[Any], less: QuerySet[Any], cap: int) -> tuple[CappedCount, int]:
    most = cap + 1 + _count_up_to(less, cap) + LESS_SLACK
    rows_sql, rows_params = (
        queryset.order_by().annotate(rq_id=F("pk")).values("rq_id")[:most].query.sql_with_params()
    )
    less_sql, less_params = less.order_by().values("pk").query.sql_with_params()
    sql = (
        f"SELECT COUNT(*), MAX(rq_rows.rq_id), (SELECT COUNT(*) FROM ({less_sql}) rq_less) "
        f"FROM ({rows_sql}) rq_rows"
    )
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(sql, [*less_params, *rows_params])
        read, top, taken = cursor.fetchone()
    if read >= most:
        # More than cap + 1 remain once the running ones are taken away.
        return CappedCount(cap + 1, cap), int(_top(queryset) or 0)
    return CappedCount(int(read) - int(taken), cap), int(top or 0)


def _top(queryset: QuerySet[Any]) -> int | None:
    return queryset.order_by("-pk").values_list("pk", flat=True).first()


def _count_up_to(queryset: QuerySet[Any], most: int) -> int:
    """How many rows ``queryset`` has, reading at most ``most``: from the
    one execution table its filter names where it names no other
    (``own_table``), else through the query itself."""
    own = own_table.rows_sql(queryset)
    if own is None:
        return int(queryset.order_by().values("pk")[:most].count())
    (count,) = _one_row(queryset, "COUNT(*)", own, most)
    return int(count)


def _one_row(
    queryset: QuerySet[Any], figures: str, rows: tuple[str, list[Any]], most: int
) -> tuple[Any, ...]:
    """``figures`` over at most ``most`` of ``rows`` (``own_table``'s)."""
    sql, params = rows
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(f"SELECT {figures} FROM ({sql} LIMIT %s) rq_rows", [*params, most])
        return tuple(cursor.fetchone())


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
