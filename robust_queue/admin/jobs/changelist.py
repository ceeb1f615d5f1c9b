"""The job list's own parts: its order (a state's own, or a column an
index serves: ``sorting.py``), state tabs that keep the filters, the cap
note, and "Show all" within the state."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.admin.views.main import (
    ALL_VAR,
    ERROR_FLAG,
    ORDER_VAR,
    PAGE_VAR,
    ChangeList,
)
from django.http import HttpRequest
from django.template.response import TemplateResponse

from ...models import JobState
from ...models.job_state import EXECUTION_ACCESSORS
from ..counting import CappedPaginator
from . import sorting
from .filters import StateFilter

# The lists whose order is oldest (or soonest) first.
ASCENDING = (JobState.SCHEDULED, JobState.BLOCKED)
# Query parameters a state tab does not carry over: where you were in the
# list, and its order (another state's columns differ).
NOT_KEPT = (PAGE_VAR, ERROR_FLAG, ORDER_VAR, StateFilter.parameter_name)
# Query parameters that do not narrow a list (its page, order, "all",
# Django's facets switch).
NOT_NARROWING = (PAGE_VAR, ERROR_FLAG, ORDER_VAR, ALL_VAR, "_facets")


class FixedOrderChangeList(ChangeList):
    """A job list in its state's order (``columns.ORDERING``) or by one
    column an index serves (``sorting.SORTABLE``); an ``o=`` naming any
    other column changes nothing."""

    def get_ordering(self, request: HttpRequest, queryset: Any) -> list[Any]:
        chosen = sorting.chosen_ordering(request, self.params, self.list_display)
        ordering = chosen or list(self.model_admin.get_ordering(request) or ())
        # A total order: ties broken by the primary key, unless a field
        # already breaks them. A tie-breaker on the job table after an
        # order on the state's table spans two tables, which MariaDB sorts
        # after joining every row (2.9 s for the failed list at 10M jobs).
        unique = _unique_fields(str(self.params.get(StateFilter.parameter_name, "")))
        if unique & {field.lstrip("-") for field in ordering}:
            return ordering
        return [*ordering, "-pk"]

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        # Django's "N results (Show all)" beside the search links to "?",
        # which leaves the state's list: the page's own link keeps the
        # state (``show_all_query``), so Django's is not shown.
        self.full_result_count = self.result_count

    @property
    def show_all_query(self) -> str | None:
        """The query of this state's whole list (the search and the other
        filters dropped), or None when nothing narrows it."""
        state = str(self.params.get(StateFilter.parameter_name, ""))
        if not set(self.params) - {StateFilter.parameter_name, *NOT_NARROWING}:
            return None
        return "?" + urlencode({StateFilter.parameter_name: state} if state else {})


def _unique_fields(state: str) -> set[str]:
    """Fields unique among the jobs of a state's list: the primary key,
    and the id and job id of the state's own table (one row per job, and
    the list holds only jobs that have one)."""
    accessor = EXECUTION_ACCESSORS.get(JobState(state)) if state in JobState.values else None
    fields = {"pk"}
    if accessor is not None:
        fields |= {f"{accessor}__id", f"{accessor}__pk", f"{accessor}__job_id"}
    return fields


def state_tabs(request: HttpRequest) -> list[dict[str, Any]]:
    """One tab per state (and "All"), each keeping the search and filters."""
    current = str(request.GET.get(StateFilter.parameter_name, ""))
    tabs = []
    for value, label in [("", "All"), *JobState.choices]:
        query = request.GET.copy()
        for name in NOT_KEPT:
            query.pop(name, None)
        if value:
            query[StateFilter.parameter_name] = value
        tabs.append(
            {
                "value": value,
                "label": label,
                "query": query.urlencode(),
                "selected": value == current,
            }
        )
    return tabs


def note_the_cap(response: Any, search_note: str = "") -> None:
    """Tell the list's reader when it shows only the newest jobs (and of
    how many), and when its search read only part of the failures."""
    if not isinstance(response, TemplateResponse) or response.context_data is None:
        return
    if search_note:
        response.context_data["rq_search_note"] = search_note
    cl = response.context_data.get("cl")
    paginator = getattr(cl, "paginator", None)
    if isinstance(paginator, CappedPaginator) and paginator.is_capped:
        state = str(cl.params.get(StateFilter.parameter_name, ""))  # type: ignore[union-attr]
        which = "first" if state in ASCENDING else "newest"
        count = paginator.count
        of = count.shown if count.is_estimated else f"more than {count.cap_shown}"
        response.context_data["rq_cap_note"] = (
            f"Showing the {which} {count.cap_shown} of {of} matching jobs. "
            f"{count.explained} Narrow the filter or search to see the others."
        )
