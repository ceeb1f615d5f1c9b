"""The jobs admin: one list per state, a job page, retry/discard/run
now/cancel."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path
from django.utils.functional import cached_property

from ... import conf
from ...models import Job, JobState
from ...models.clock import DatabaseNow
from ...models.job_state import EXECUTION_ACCESSORS
from .. import permissions
from ..counting import CappedPaginator
from ..dashboard import overview as dashboard
from ..dashboard import task_page, task_pauses
from ..jobs_context import JobsContext
from ..masking import values as masking
from ..masking.json_text import KeyText
from ..readonly import ReadOnlyAdminMixin
from . import (
    bulk,
    changelist,
    columns,
    concurrency,
    filters,
    job_reschedule,
    job_views,
    key_filters,
    row_actions,
    search,
    sorting,
    stranded,
)
from .tag_filter import TagFilter

if TYPE_CHECKING:
    # Generic in the stubs, not subscriptable at run time.
    _ModelAdmin: TypeAlias = admin.ModelAdmin[Job]
else:
    _ModelAdmin = admin.ModelAdmin

# The large columns: never read for a list.
LARGE_FIELDS = ("arguments", "return_value", "errors", "failed_execution__error")


def _with_executions_of(jobs: QuerySet[Job], state: str) -> QuerySet[Job]:
    """Joined for display: the state list's own execution table only (a
    join the planner misjudges can cost a scan per row); the "All" list's
    state column needs them all."""
    if state not in JobState.values:
        return jobs.select_related(*EXECUTION_ACCESSORS.values())
    accessor = EXECUTION_ACCESSORS.get(JobState(state))
    return jobs.select_related(accessor) if accessor else jobs


class JobAdmin(ReadOnlyAdminMixin, columns.ColumnsMixin, _ModelAdmin):
    # Per state: columns.LIST_DISPLAY (get_list_display).
    list_display = columns.LIST_DISPLAY[""]
    list_display_links = ("job",)
    list_filter = (
        filters.StateFilter,
        filters.QueueFilter,
        filters.TaskFilter,
        filters.PeriodFilter,
        filters.ExceptionFilter,
        filters.ProcessFilter,
        key_filters.ConcurrencyKeyFilter,
        key_filters.KeyOfFilter,
        key_filters.RateKeyOfFilter,
        key_filters.UniqueKeyFilter,
        TagFilter,
    )
    search_fields = ("result_id", "task_path")
    search_help_text = search.HELP
    ordering = ("-pk",)
    # Each list has its order, served by an index (columns.ORDERING), and
    # sorts by the columns an index serves only (get_sortable_by): a
    # hand-typed ``o=`` must not sort a million rows another way.
    sortable_by = ()
    paginator = CappedPaginator
    # Facet counts would count each filter choice over the whole table.
    show_facets = admin.ShowFacets.NEVER
    show_full_result_count = False
    list_per_page = 50
    list_max_show_all = 200
    actions = (
        "retry_selected",
        "run_selected_now",
        "reschedule_selected",
        "cancel_selected",
        "discard_selected",
    )

    @property
    def using(self) -> str:
        return conf.queue_database()

    @cached_property
    def jobs_context(self) -> JobsContext:
        """What the views need of this admin (they never import it)."""
        return JobsContext(
            site=self.admin_site,
            opts=self.opts,
            # Looked up at each call, as Django's admin does.
            may_view=lambda request: self.has_view_permission(request),
            database=lambda: self.using,
        )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Job]:
        state = filters.state_of(request)
        jobs = _with_executions_of(Job.objects.using(self.using).all(), state)
        large = list(LARGE_FIELDS)
        if state in (JobState.FAILED, JobState.BLOCKED) and masking.is_on():
            # The failure message and the key are masked with the values of
            # the row's arguments: read them in the list's one query.
            large.remove("arguments")
        if state not in ("", JobState.FAILED):
            large.remove("failed_execution__error")  # not joined
        jobs = jobs.defer(*large)
        if state in columns.CLOCKED_STATES:
            jobs = jobs.annotate(**{columns.DB_NOW: DatabaseNow()})
        if state == JobState.FAILED:
            jobs = jobs.annotate(
                exception_class=KeyText("exception_class_path", "failed_execution__error"),
                error_traceback=KeyText("traceback", "failed_execution__error"),
            )
        return jobs

    def get_list_display(self, request: HttpRequest) -> Any:
        shown = columns.list_display_for(request)
        actions = row_actions.column(self.jobs_context, request)
        return shown if actions is None else (*shown, actions)

    def get_sortable_by(self, request: HttpRequest) -> Any:
        return sorting.sortable_columns(request)

    def get_ordering(self, request: HttpRequest) -> Any:
        return columns.ordering_for(request)

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> Any:
        return changelist.FixedOrderChangeList

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Job], search_term: str
    ) -> tuple[QuerySet[Job], bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        found = search.search(queryset, term, filters.state_of(request))
        # Said on the page (changelist.note_the_cap).
        request.rq_search_note = found.note  # type: ignore[attr-defined]
        return found.jobs, False

    def has_retry_permission(self, request: HttpRequest) -> bool:
        return self._may(request, permissions.RETRY)

    def has_discard_permission(self, request: HttpRequest) -> bool:
        return self._may(request, permissions.DISCARD)

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return self._may(request, permissions.CANCEL)

    def has_run_now_permission(self, request: HttpRequest) -> bool:
        return self._may(request, permissions.RUN_NOW)

    def has_reschedule_permission(self, request: HttpRequest) -> bool:
        return self._may(request, permissions.RESCHEDULE)

    def _may(self, request: HttpRequest, codename: str) -> bool:
        return self.has_view_permission(request) and permissions.has(request, codename)

    # Actions on selected rows, or on everything matching the filter: each
    # asks first (bulk.py) with the exact count.
    @admin.action(description="Retry selected failed jobs…", permissions=["retry"])
    def retry_selected(self, request: HttpRequest, queryset: QuerySet[Job]) -> Any:
        return bulk.handle(self.jobs_context, request, queryset, "retry")

    @admin.action(description="Run selected scheduled/blocked jobs now…", permissions=["run_now"])
    def run_selected_now(self, request: HttpRequest, queryset: QuerySet[Job]) -> Any:
        return bulk.handle(self.jobs_context, request, queryset, "run_now")

    @admin.action(description="Cancel selected waiting or running jobs…", permissions=["cancel"])
    def cancel_selected(self, request: HttpRequest, queryset: QuerySet[Job]) -> Any:
        return bulk.handle(self.jobs_context, request, queryset, "cancel")

    @admin.action(description="Discard selected jobs (not running ones)…", permissions=["discard"])
    def discard_selected(self, request: HttpRequest, queryset: QuerySet[Job]) -> Any:
        return bulk.handle(self.jobs_context, request, queryset, "discard")

    @admin.action(
        description="Reschedule selected scheduled/failed jobs…", permissions=["reschedule"]
    )
    def reschedule_selected(self, request: HttpRequest, queryset: QuerySet[Job]) -> Any:
        return job_reschedule.handle(self.jobs_context, request, queryset)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        permissions.refuse_forged_action(self, request)
        context = {
            "state_tabs": changelist.state_tabs(request),
            "rq_sort_note": sorting.note(request, self._column_labels(request)),
            "rq_row_form": row_actions.FORM_ID,
            **(extra_context or {}),
        }
        response = super().changelist_view(request, context)
        changelist.note_the_cap(response, getattr(request, "rq_search_note", ""))
        return response

    def _column_labels(self, request: HttpRequest) -> dict[str, str]:
        """Each column's header (its ``admin.display`` description)."""
        return {
            name: str(getattr(getattr(self, name, None), "short_description", name))
            for name in columns.list_display_for(request)
        }

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        return job_views.detail(self.jobs_context, request, object_id)

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        jobs = self.jobs_context
        own = [
            path("overview/", view(dashboard.overview_view(jobs)), name="robust_queue_overview"),
            path(
                "concurrency/",
                view(concurrency.view_for(jobs)),
                name="robust_queue_concurrency",
            ),
            path(
                "queues/<str:verb>/",
                view(dashboard.queue_view(jobs)),
                name="robust_queue_queue",
            ),
            path(
                "tasks/<str:verb>/",
                view(task_pauses.view_for(jobs)),
                name="robust_queue_task",
            ),
            path(
                "task/<path:task_path>/",
                view(task_page.view_for(jobs)),
                name="robust_queue_task_page",
            ),
            path("stranded/", view(stranded.list_view(jobs)), name="robust_queue_stranded"),
            path(
                "stranded/move/",
                view(stranded.move_view(jobs)),
                name="robust_queue_stranded_move",
            ),
            path(
                "<path:object_id>/do/<str:verb>/",
                view(job_views.action_view(jobs)),
                name="robust_queue_job_action",
            ),
        ]
        return own + super().get_urls()
