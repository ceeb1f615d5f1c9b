"""The recurring tasks page: schedule, next run, last runs, run now,
enable / disable (``recurring_switch.py``), and runtime schedules added,
changed and deleted (``schedule_editing.py``, ``schedule_form.py``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from crontab import CronTab
from django.contrib import admin
from django.db.models import OuterRef, QuerySet, Subquery
from django.forms import Form
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from ... import conf
from ...models import RecurringExecution, RecurringTask
from .. import permissions
from ..jobs import columns
from ..masking import values as masking
from . import recurring_now, recurring_runs, recurring_switch, schedule_editing
from .schedule_form import ScheduleForm

if TYPE_CHECKING:
    # Generic in the stubs, not subscriptable at run time.
    _ModelAdmin: TypeAlias = admin.ModelAdmin[RecurringTask]
else:
    _ModelAdmin = admin.ModelAdmin

logger = logging.getLogger(__name__)


def next_run(schedule: str, after: datetime | None = None) -> datetime | None:
    """The next slot of a cron ``schedule``, read in the project's zone."""
    try:
        crontab = CronTab(schedule)
    except ValueError:
        return None
    now = timezone.localtime(after or timezone.now())
    value: datetime = crontab.next(now=now, delta=False, return_datetime=True, default_utc=False)
    return value


def _job_url(job_id: int) -> str:
    return reverse("admin:robust_queue_job_change", args=[job_id])


class RecurringTaskAdmin(_ModelAdmin):
    form = ScheduleForm
    list_display = (
        "key",
        "status",
        "schedule_label",
        "task_path",
        "queue_name",
        "next_run_at",
        "last_enqueued_at",
        "run_button",
        "switch_button",
    )
    search_fields = ("key", "task_path")
    ordering = ("key",)
    actions = ("run_selected_now", "enable_selected", "disable_selected")
    show_facets = admin.ShowFacets.NEVER

    def get_queryset(self, request: HttpRequest) -> QuerySet[RecurringTask]:
        using = conf.queue_database()
        last = (
            RecurringExecution.objects.using(using)
            .filter(task_key=OuterRef("key"))
            .order_by("-run_at")
        )
        return RecurringTask.objects.using(using).annotate(
            last_enqueued=Subquery(last.values("run_at")[:1]),
            last_job_id=Subquery(last.values("job_id")[:1]),
        )

    def has_run_now_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request) and permissions.has(request, permissions.RUN_NOW)

    def has_toggle_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request) and permissions.has(
            request, permissions.TOGGLE_RECURRING
        )

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return schedule_editing.is_editable(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return schedule_editing.is_editable(obj) and super().has_delete_permission(request, obj)

    def get_fields(self, request: HttpRequest, obj: RecurringTask | None = None) -> Any:
        # The page of one task: its arguments only as the mask shows them.
        if obj is None:
            return schedule_editing.ADD_FIELDS
        editable = self.has_change_permission(request, obj)
        fields = schedule_editing.CHANGE_FIELDS if editable else schedule_editing.READ_FIELDS
        if self.has_toggle_permission(request):
            return fields
        return [field for field in fields if field != "switch_control"]

    def get_readonly_fields(self, request: HttpRequest, obj: RecurringTask | None = None) -> Any:
        if obj is None:
            return ()
        if self.has_change_permission(request, obj):
            return schedule_editing.CHANGE_READONLY
        return schedule_editing.READ_FIELDS

    def get_actions(self, request: HttpRequest, action_location: Any = None) -> Any:
        # One schedule at a time, from its page: a bulk delete would reach
        # declared rows too. Django 6.1 passes action_location (and warns
        # about an override without it); Django 5.2 knows no such argument.
        if action_location is None:
            actions = super().get_actions(request)
        else:
            actions = super().get_actions(request, action_location=action_location)  # type: ignore[call-arg]
        actions.pop("delete_selected", None)
        return actions

    def save_model(
        self, request: HttpRequest, obj: RecurringTask, form: Form, change: bool
    ) -> None:
        obj.static, obj.updated_at = False, timezone.now()
        obj.save(using=conf.queue_database())

    def log_addition(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        schedule_editing.record(request, obj, "add")
        return super().log_addition(request, obj, message)

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        schedule_editing.record(request, obj, "change")
        return super().log_change(request, obj, message)

    def log_deletions(self, request: HttpRequest, queryset: Any) -> Any:
        for obj in queryset:
            schedule_editing.record(request, obj, "delete")
        return super().log_deletions(request, queryset)

    @admin.display(description="Schedule")
    def schedule_label(self, obj: RecurringTask) -> str:
        return str(obj.slots)

    @admin.display(description="Status")
    def status(self, obj: RecurringTask) -> str:
        if obj.enabled:
            return format_html('<span class="rq-state rq-state-ready">{}</span>', "Enabled")
        return format_html('<span class="rq-state rq-state-paused">{}</span>', "Disabled")

    @admin.display(description="")
    def switch_button(self, obj: RecurringTask) -> str:
        return recurring_switch.button(obj)

    @admin.display(description="Schedule switch")
    def switch_control(self, obj: RecurringTask) -> str:
        return recurring_switch.button(obj, back="change")

    @admin.display(description="Last runs")
    def last_runs(self, obj: RecurringTask) -> str:
        return recurring_runs.last_runs(obj.key, conf.queue_database())

    @admin.display(description="Arguments")
    def masked_arguments(self, obj: RecurringTask) -> str:
        return format_html(
            '<pre class="rq-code">{}</pre>',
            masking.shown_arguments(obj.task_path, obj.backend_alias, obj.arguments),
        )

    @admin.display(description="Next run")
    def next_run_at(self, obj: RecurringTask) -> str:
        if not obj.enabled:
            return format_html('<span class="rq-muted">{}</span>', "— (disabled)")
        try:
            return columns.moment(obj.slots.next_after(timezone.now()))
        except (ValueError, LookupError):  # a row written past validation
            return columns.moment(None)

    @admin.display(description="Last run")
    def last_enqueued_at(self, obj: RecurringTask) -> str:
        at, job_id = getattr(obj, "last_enqueued", None), getattr(obj, "last_job_id", None)
        if at is None:
            return "—"
        job = recurring_runs.job_of(conf.queue_database(), job_id)
        if job is None:  # the job was cleared; the dedup row outlives it
            return columns.moment(at)
        return format_html(
            '{} · <a href="{}">job #{}</a> {}',
            columns.moment(at),
            _job_url(job.pk),
            job.pk,
            recurring_runs.state_badge(job),
        )

    @admin.display(description="")
    def run_button(self, obj: RecurringTask) -> str:
        url = reverse("admin:robust_queue_recurringtask_run", args=[obj.pk])
        # Rendered inside the changelist form: submit to another URL.
        return format_html(
            '<button type="submit" class="button rq-run" formaction="{}" formmethod="post">Run now</button>',
            url,
        )

    @admin.action(description="Run selected recurring tasks now", permissions=["run_now"])
    def run_selected_now(self, request: HttpRequest, queryset: QuerySet[RecurringTask]) -> None:
        for recurring_task in queryset:
            recurring_now.run_now(request, recurring_task)

    @admin.action(description="Enable selected recurring tasks", permissions=["toggle"])
    def enable_selected(self, request: HttpRequest, queryset: QuerySet[RecurringTask]) -> None:
        for recurring_task in queryset:
            recurring_switch.switch(request, recurring_task, True)

    @admin.action(description="Disable selected recurring tasks", permissions=["toggle"])
    def disable_selected(self, request: HttpRequest, queryset: QuerySet[RecurringTask]) -> None:
        for recurring_task in queryset:
            recurring_switch.switch(request, recurring_task, False)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        permissions.refuse_forged_action(self, request)
        context = {"can_run_now": self.has_run_now_permission(request), **(extra_context or {})}
        return super().changelist_view(request, context)

    def get_list_display(self, request: HttpRequest) -> Any:
        hidden = set()
        if not self.has_run_now_permission(request):
            hidden.add("run_button")
        if not self.has_toggle_permission(request):
            hidden.add("switch_button")
        return [c for c in super().get_list_display(request) if c not in hidden]

    def get_urls(self) -> list[URLPattern]:
        run = self.admin_site.admin_view(self._run_view())
        switch = self.admin_site.admin_view(recurring_switch.view_for(self))
        return [
            path("<int:pk>/run/", run, name="robust_queue_recurringtask_run"),
            path(
                "<int:pk>/schedule/<str:verb>/",
                switch,
                name="robust_queue_recurringtask_switch",
            ),
            *super().get_urls(),
        ]

    def _run_view(self) -> Callable[..., HttpResponse]:
        @require_POST
        def view(request: HttpRequest, pk: int) -> HttpResponse:
            permissions.require(self, request, permissions.RUN_NOW)
            recurring_task = get_object_or_404(
                RecurringTask.objects.using(conf.queue_database()), pk=pk
            )
            recurring_now.run_now(request, recurring_task)
            return HttpResponseRedirect(reverse("admin:robust_queue_recurringtask_changelist"))

        return view
