"""The overview and concurrency pages, and pausing queues."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Min
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from ..models import BlockedExecution, Queue, Semaphore
from . import permissions, stats
from .chart import bar_chart

if TYPE_CHECKING:
    from .jobs import JobAdmin

# The concurrency page lists at most this many keys of each kind.
KEYS_SHOWN = 200

logger = logging.getLogger(__name__)


def overview_view(model_admin: JobAdmin) -> Callable[[HttpRequest], HttpResponse]:
    def view(request: HttpRequest) -> HttpResponse:
        _require_view(model_admin, request)
        using = model_admin.using
        context = {
            **_base_context(model_admin, request, "Queue overview"),
            "queues": stats.queues(using),
            "counts": stats.state_counts(using),
            "charts": [
                bar_chart("Last hour, per minute", stats.throughput(using, "minute", 60), "%H:%M"),
                bar_chart("Last day, per hour", stats.throughput(using, "hour", 24), "%H:00"),
            ],
            "failure_groups": stats.failure_groups(using),
        }
        return TemplateResponse(request, "admin/robust_queue/overview.html", context)

    return view


def concurrency_view(model_admin: JobAdmin) -> Callable[[HttpRequest], HttpResponse]:
    def view(request: HttpRequest) -> HttpResponse:
        _require_view(model_admin, request)
        using = model_admin.using
        blocked = (
            BlockedExecution.objects.using(using)
            .values("concurrency_key")
            .annotate(count=Count("pk"), oldest=Min("created_at"), expires=Min("expires_at"))
            .order_by("oldest")[:KEYS_SHOWN]
        )
        context = {
            **_base_context(model_admin, request, "Concurrency"),
            "semaphores": Semaphore.objects.using(using).order_by("key")[:KEYS_SHOWN],
            "blocked_keys": list(blocked),
            "keys_shown": KEYS_SHOWN,
        }
        return TemplateResponse(request, "admin/robust_queue/concurrency.html", context)

    return view


def queue_view(model_admin: JobAdmin) -> Callable[..., HttpResponse]:
    @require_POST
    def view(request: HttpRequest, name: str, verb: str) -> HttpResponse:
        if verb not in ("pause", "resume"):
            raise Http404
        permissions.require(request, permissions.PAUSE)
        queue = Queue(name, model_admin.using)
        if verb == "pause":
            queue.pause()
        else:
            queue.resume()
        logger.info("Queue %s %sd by %s", name, verb, request.user)
        messages.success(request, f"Queue {name!r} {verb}d.")
        url = reverse("admin:robust_queue_overview", current_app=model_admin.admin_site.name)
        return HttpResponseRedirect(url)

    return view


def _require_view(model_admin: JobAdmin, request: HttpRequest) -> None:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied


def _base_context(model_admin: JobAdmin, request: HttpRequest, title: str) -> dict[str, Any]:
    return {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": title,
        "perms_granted": permissions.granted(request),
    }
