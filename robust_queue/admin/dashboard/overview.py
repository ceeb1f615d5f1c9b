"""The overview page, and pausing queues."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.contrib import messages
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.views.decorators.http import require_POST

from ...models import Pause, Queue
from ...operations import counting, queues
from ...options.validation import QUEUE_NAME_RULE, is_valid_queue_name
from .. import audit, display, pages, permissions
from ..jobs_context import JobsContext
from . import stats, task_pauses, task_stats
from .chart import bar_chart

QUEUE_NAME_MAX_LENGTH = Pause._meta.get_field("queue_name").max_length or 0

logger = logging.getLogger(__name__)


def overview_view(jobs: JobsContext) -> Callable[[HttpRequest], HttpResponse]:
    def view(request: HttpRequest) -> HttpResponse:
        jobs.require_view(request)
        using = jobs.using
        counts = stats.state_counts(using)
        context = {
            **pages.context(jobs, request, "Queue overview"),
            "queues": queues.queue_rows(using),
            "counts": counts,
            "charts": [
                bar_chart("Last hour, per minute", stats.throughput(using, "minute", 60), "%H:%M"),
                # Hours start at :30 in a zone half an hour off UTC.
                bar_chart("Last day, per hour", stats.throughput(using, "hour", 24), "%H:%M"),
            ],
            "top_tasks": _top_tasks(using),
            "failure_groups": stats.failure_groups(using),
            "failures_sampled": (
                display.number(stats.RECENT_FAILURES)
                if int(counts["failed"]) > stats.RECENT_FAILURES
                and not stats.groups_cover_all(using)
                else ""
            ),
            "capped_counts": [count for count in counts.values() if count.is_capped],
            "count_cap": display.number(counting.DEFAULT_COUNT_CAP),
            "paused_tasks": task_pauses.paused(using),
        }
        return TemplateResponse(request, "admin/robust_queue/overview.html", context)

    return view


def _top_tasks(using: str) -> list[tuple[str, str, list[tuple[str, task_stats.TaskFigures]]]]:
    """(path, short name, figures per window) of the busiest tasks of the
    last day, with their last hour's figures too."""
    return [(path, path.rpartition(".")[2], windows) for path, windows in task_stats.busiest(using)]


def queue_view(jobs: JobsContext) -> Callable[..., HttpResponse]:
    """Pause or resume the queue named in the form (any name: it is not
    part of the URL); a name no queue can have is refused."""

    @require_POST
    def view(request: HttpRequest, verb: str) -> HttpResponse:
        if verb not in ("pause", "resume"):
            raise Http404
        jobs.require(request, permissions.PAUSE)
        name = request.POST.get("queue")
        if name is None:
            return HttpResponseBadRequest("No queue named.")
        if len(name) > QUEUE_NAME_MAX_LENGTH:
            messages.error(request, f"{name[:80]!r}... cannot be a queue name: it is too long.")
        elif verb == "pause" and not is_valid_queue_name(name):
            messages.error(request, f"{name!r} cannot be a queue name: {QUEUE_NAME_RULE}.")
        else:
            _pause_or_resume(Queue(name, jobs.using), verb)
            audit.record(request.user.pk, f"{verb.capitalize()}d queue {name!r}.", queue=name)
            messages.success(request, f"Queue {name!r} {verb}d.")
        return HttpResponseRedirect(jobs.named_url("robust_queue_overview"))

    return view


def _pause_or_resume(queue: Queue, verb: str) -> None:
    if verb == "pause":
        queue.pause()
    else:
        queue.resume()
