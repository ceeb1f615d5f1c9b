"""The job list's own parts: its fixed order, state tabs that keep the
filters, the cap note."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.views.main import ERROR_FLAG, PAGE_VAR, ChangeList
from django.http import HttpRequest
from django.template.response import TemplateResponse

from ...models import JobState
from ..counting import CappedPaginator
from .filters import StateFilter

# The lists whose order is oldest (or soonest) first.
ASCENDING = (JobState.SCHEDULED, JobState.BLOCKED)
# Query parameters a state tab does not carry over: where you were in the list.
NOT_KEPT = (PAGE_VAR, ERROR_FLAG, StateFilter.parameter_name)


class FixedOrderChangeList(ChangeList):
    """A job list in its state's one order (``columns.ORDERING``), served
    by an index; a hand-typed ``o=`` changes nothing."""

    def get_ordering(self, request: HttpRequest, queryset: Any) -> list[Any]:
        ordering = list(self.model_admin.get_ordering(request) or ())
        # A total order: ties broken by the primary key.
        return ordering if {"pk", "-pk"} & set(ordering) else [*ordering, "-pk"]


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


def note_the_cap(response: Any) -> None:
    """Tell the list's reader when it shows only the newest jobs."""
    if not isinstance(response, TemplateResponse) or response.context_data is None:
        return
    cl = response.context_data.get("cl")
    paginator = getattr(cl, "paginator", None)
    if isinstance(paginator, CappedPaginator) and paginator.is_capped:
        state = str(cl.params.get(StateFilter.parameter_name, ""))  # type: ignore[union-attr]
        which = "first" if state in ASCENDING else "newest"
        response.context_data["rq_cap_note"] = (
            f"Showing the {which} {paginator.cap:,} matching jobs only: "
            "narrow the filter or search to see the others."
        )
