"""The admin's paginator: its count stops at a cap (``operations.counting``),
past which it is the planner's estimate where the database gives one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from django.core.paginator import EmptyPage, Page, PageNotAnInteger, Paginator
from django.db.models import QuerySet
from django.utils.functional import cached_property

from ..operations import counting
from ..operations.counting import CappedCount, capped_count

if TYPE_CHECKING:
    # Generic in the stubs, not subscriptable at run time.
    _Paginator: TypeAlias = Paginator[Any]
else:
    _Paginator = Paginator


class CappedPaginator(_Paginator):
    """A paginator whose count stops at the cap: no full table scan.

    Pages stop at the cap (the list says so; filters narrow it), and a
    page number past the end or not a number shows the nearest page
    instead of an error that would drop the filters. A page is read in two
    steps: the ids of its rows (the filters and the order, nothing else
    joined), then those rows with everything the list shows: however deep
    the page, the joins that only display a row run for its rows alone.
    """

    _cap: int | None = None

    @property
    def cap(self) -> int:
        # The module's constant read at each use (a test may lower it),
        # unless this paginator was given its own.
        return counting.DEFAULT_COUNT_CAP if self._cap is None else self._cap

    @cap.setter
    def cap(self, value: int) -> None:
        self._cap = value

    def page(self, number: int | float | str) -> Any:
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        top = min(bottom + self.per_page, self.cap)
        return Page(_rows(self.object_list, bottom, top), number, self)

    @cached_property
    def count(self) -> CappedCount:
        return capped_count(self.object_list, self.cap, estimate=True)  # type: ignore[arg-type]

    @cached_property
    def num_pages(self) -> int:
        shown = min(int(self.count), self.cap)
        if shown == 0 and not self.allow_empty_first_page:
            return 0
        return max(1, -(-shown // self.per_page))

    @property
    def is_capped(self) -> bool:
        return bool(getattr(self.count, "is_capped", False))

    def validate_number(self, number: int | float | str) -> int:
        try:
            return super().validate_number(number)
        except PageNotAnInteger:
            return 1
        except EmptyPage:
            return self.num_pages if _as_int(number) > 1 else 1


def _rows(object_list: Any, bottom: int, top: int) -> Any:
    if not isinstance(object_list, QuerySet):
        return object_list[bottom:top]
    ids = list(object_list.values_list("pk", flat=True)[bottom:top])
    rows = {row.pk: row for row in object_list.filter(pk__in=ids)}
    return [rows[pk] for pk in ids if pk in rows]


def _as_int(number: int | float | str) -> int:
    try:
        return int(number)
    except (TypeError, ValueError, OverflowError):
        return 1
