"""One task's page: p50/p95 run time and wait, throughput and failure rate
over the last hour and day, and its attempts per hour (``task_stats``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse

from ..models import TaskPause
from . import display, pages, stats, task_stats
from .chart import bar_chart

if TYPE_CHECKING:
    from .jobs import JobAdmin


def url(task_path: str, site_name: str = "admin") -> str:
    """The page of ``task_path`` (any string: ``reverse`` quotes it)."""
    return reverse(f"{site_name}:robust_queue_task_page", args=[task_path], current_app=site_name)


def view_for(model_admin: JobAdmin) -> Callable[[HttpRequest, str], HttpResponse]:
    def view(request: HttpRequest, task_path: str) -> HttpResponse:
        if not model_admin.has_view_permission(request):
            raise PermissionDenied
        using = model_admin.using
        shown = display.text(task_path)
        hourly = stats.throughput(using, "hour", 24, task_path=task_path)
        context = {
            **pages.context(
                model_admin,
                request,
                f"Task {shown}",
                [(pages.jobs_url(model_admin), "Jobs"), ("", shown)],
            ),
            "task_path": task_path,
            "windows": task_stats.figures(using, task_path),
            "chart": bar_chart("Last day, per hour", hourly, "%H:%M"),
            "task_paused": TaskPause.objects.using(using).is_paused(task_path),
            "jobs_query": urlencode({"task": task_path}),
        }
        return TemplateResponse(request, "admin/robust_queue/task.html", context)

    return view
