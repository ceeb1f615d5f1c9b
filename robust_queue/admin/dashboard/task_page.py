"""One task's page: p50/p95 run time and wait, throughput and failure rate
over the last hour and day, and its attempts per hour (``task_stats``)."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from ...models import TaskPause
from .. import display, pages
from ..jobs_context import JobsContext
from . import stats, task_stats
from .chart import bar_chart


def view_for(jobs: JobsContext) -> Callable[[HttpRequest, str], HttpResponse]:
    def view(request: HttpRequest, task_path: str) -> HttpResponse:
        jobs.require_view(request)
        using = jobs.using
        shown = display.text(task_path)
        hourly = stats.throughput(using, "hour", 24, task_path=task_path)
        context = {
            **pages.context(
                jobs, request, f"Task {shown}", [(jobs.jobs_url(), "Jobs"), ("", shown)]
            ),
            "task_path": task_path,
            "windows": task_stats.figures(using, task_path),
            "chart": bar_chart("Last day, per hour", hourly, "%H:%M"),
            "task_paused": TaskPause.objects.using(using).is_paused(task_path),
            "jobs_query": urlencode({"task": task_path}),
        }
        return TemplateResponse(request, "admin/robust_queue/task.html", context)

    return view
