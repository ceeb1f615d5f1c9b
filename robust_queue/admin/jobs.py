"""The jobs admin: one list per state, a job page, retry/discard/run now."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.db.models.fields.json import KeyTextTransform
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path
from django.utils.html import format_html

from .. import conf
from ..models import Job, JobState
from ..models.job import RESULT_ID_MAX_LENGTH
from . import dashboard, filters, job_views, operations, permissions
from .counting import CappedPaginator
from .readonly import ReadOnlyAdminMixin

# The large columns: never read for a list.
LARGE_FIELDS = ("arguments", "return_value", "errors", "failed_execution__error")


class JobAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "job",
        "task",
        "queue_name",
        "priority",
        "state_badge",
        "enqueued_at",
        "ended_at",
        "attempts",
        "exception",
    )
    list_display_links = ("job",)
    list_filter = (
        filters.StateFilter,
        filters.QueueFilter,
        filters.TaskFilter,
        filters.PeriodFilter,
        filters.ExceptionFilter,
        filters.ProcessFilter,
        filters.ConcurrencyKeyFilter,
    )
    search_fields = ("result_id", "task_path")
    search_help_text = "A result id, or part of a task path."
    ordering = ("-pk",)
    sortable_by = ("job",)
    paginator = CappedPaginator
    show_full_result_count = False
    list_per_page = 50
    list_max_show_all = 200
    actions = ("retry_selected", "run_selected_now", "discard_selected")

    @property
    def using(self) -> str:
        return conf.queue_database()

    def get_queryset(self, request: HttpRequest) -> QuerySet[Job]:
        return (
            Job.objects.using(self.using)
            .with_executions()
            .defer(*LARGE_FIELDS)
            .annotate(
                exception_class=KeyTextTransform("exception_class_path", "failed_execution__error")
            )
        )

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Job], search_term: str
    ) -> tuple[QuerySet[Job], bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        if len(term) <= RESULT_ID_MAX_LENGTH and queryset.filter(result_id=term).exists():
            return queryset.filter(result_id=term), False
        return queryset.filter(task_path__contains=term), False

    def has_retry_permission(self, request: HttpRequest) -> bool:
        return permissions.has(request, permissions.RETRY)

    def has_discard_permission(self, request: HttpRequest) -> bool:
        return permissions.has(request, permissions.DISCARD)

    def has_run_now_permission(self, request: HttpRequest) -> bool:
        return permissions.has(request, permissions.RUN_NOW)

    # Columns.
    @admin.display(description="Job", ordering="pk")
    def job(self, obj: Job) -> str:
        return f"#{obj.pk}"

    @admin.display(description="Task")
    def task(self, obj: Job) -> str:
        return format_html(
            '<span title="{}">{}</span>', obj.task_path, obj.task_path.rpartition(".")[2]
        )

    @admin.display(description="State")
    def state_badge(self, obj: Job) -> str:
        state = obj.state
        return format_html(
            '<span class="rq-state rq-state-{}">{}</span>', state.value, state.label
        )

    @admin.display(description="Finished / failed")
    def ended_at(self, obj: Job) -> Any:
        if obj.finished_at:
            return obj.finished_at
        return obj.failed_execution.created_at if hasattr(obj, "failed_execution") else None

    @admin.display(description="Attempts")
    def attempts(self, obj: Job) -> int:
        return len(obj.worker_ids)

    @admin.display(description="Exception")
    def exception(self, obj: Job) -> str:
        return str(getattr(obj, "exception_class", None) or "").rpartition(".")[2]

    # Actions on selected rows, or on everything matching the filter.
    @admin.action(description="Retry selected failed jobs", permissions=["retry"])
    def retry_selected(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        self._report(request, "Retried", operations.retry(queryset))

    @admin.action(description="Run selected scheduled/blocked jobs now", permissions=["run_now"])
    def run_selected_now(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        self._report(request, "Made ready", operations.run_now(queryset))

    @admin.action(description="Discard selected jobs (not running ones)", permissions=["discard"])
    def discard_selected(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        self._report(request, "Discarded", operations.discard(queryset))

    def _report(self, request: HttpRequest, verb: str, outcome: operations.Outcome) -> None:
        message = f"{verb} {outcome.changed} of {outcome.total} job(s)."
        if outcome.skipped:
            message += f" {outcome.skipped} skipped (wrong state, or locked by a worker)."
        self.message_user(
            request, message, messages.SUCCESS if outcome.changed else messages.WARNING
        )

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        permissions.refuse_forged_action(self, request)
        context = {
            "states": JobState.choices,
            "current_state": filters.state_of(request),
            **(extra_context or {}),
        }
        return super().changelist_view(request, context)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        return job_views.detail(self, request, object_id)

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        own = [
            path("overview/", view(dashboard.overview_view(self)), name="robust_queue_overview"),
            path(
                "concurrency/",
                view(dashboard.concurrency_view(self)),
                name="robust_queue_concurrency",
            ),
            path(
                "queues/<str:name>/<str:verb>/",
                view(dashboard.queue_view(self)),
                name="robust_queue_queue",
            ),
            path(
                "<path:object_id>/do/<str:verb>/",
                view(job_views.action_view(self)),
                name="robust_queue_job_action",
            ),
        ]
        return own + super().get_urls()
