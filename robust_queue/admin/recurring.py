"""The recurring tasks page: schedule, next run, last enqueued, run now."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from crontab import CronTab
from django.contrib import admin, messages
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from .. import conf
from ..exceptions import RobustQueueError
from ..models import RecurringExecution, RecurringTask
from . import permissions
from .readonly import ReadOnlyAdminMixin

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


class RecurringTaskAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "key",
        "schedule",
        "task_path",
        "queue_name",
        "next_run_at",
        "last_enqueued_at",
        "run_button",
    )
    search_fields = ("key", "task_path")
    ordering = ("key",)
    actions = ("run_selected_now",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[RecurringTask]:
        using = conf.queue_database()
        last = (
            RecurringExecution.objects.using(using)
            .filter(task_key=OuterRef("key"))
            .order_by("-run_at")
        )
        return RecurringTask.objects.using(using).annotate(
            last_enqueued=Subquery(last.values("run_at")[:1])
        )

    def has_run_now_permission(self, request: HttpRequest) -> bool:
        return permissions.has(request, permissions.RUN_NOW)

    @admin.display(description="Next run")
    def next_run_at(self, obj: RecurringTask) -> datetime | None:
        return next_run(obj.schedule)

    @admin.display(description="Last enqueued")
    def last_enqueued_at(self, obj: RecurringTask) -> datetime | None:
        return getattr(obj, "last_enqueued", None)

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
            self._run(request, recurring_task)

    def _run(self, request: HttpRequest, recurring_task: RecurringTask) -> None:
        try:
            job = recurring_task.run_now()
        except (RobustQueueError, TypeError, ValueError) as exc:
            messages.error(request, f"{recurring_task.key}: could not enqueue: {exc}")
            return
        if job is None:
            messages.warning(request, f"{recurring_task.key}: discarded by its concurrency limit.")
            return
        logger.info(
            "Recurring task %s run now by %s: job %s", recurring_task.key, request.user, job.pk
        )
        messages.success(request, f"{recurring_task.key}: enqueued as job #{job.pk}.")

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        permissions.refuse_forged_action(self, request)
        context = {"can_run_now": self.has_run_now_permission(request), **(extra_context or {})}
        return super().changelist_view(request, context)

    def get_list_display(self, request: HttpRequest) -> Any:
        shown = super().get_list_display(request)
        return (
            shown
            if self.has_run_now_permission(request)
            else [c for c in shown if c != "run_button"]
        )

    def get_urls(self) -> list[URLPattern]:
        run = self.admin_site.admin_view(self._run_view())
        return [
            path("<int:pk>/run/", run, name="robust_queue_recurringtask_run"),
            *super().get_urls(),
        ]

    def _run_view(self) -> Callable[..., HttpResponse]:
        @require_POST
        def view(request: HttpRequest, pk: int) -> HttpResponse:
            permissions.require(request, permissions.RUN_NOW)
            recurring_task = get_object_or_404(
                RecurringTask.objects.using(conf.queue_database()), pk=pk
            )
            self._run(request, recurring_task)
            return HttpResponseRedirect(reverse("admin:robust_queue_recurringtask_changelist"))

        return view
