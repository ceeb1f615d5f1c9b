"""The job page and its one-job actions (retry, discard, run now)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from ..exceptions import UndiscardableError
from ..models import Job, JobState
from . import masking, operations, permissions

if TYPE_CHECKING:
    from .jobs import JobAdmin

VERBS = {
    "retry": permissions.RETRY,
    "discard": permissions.DISCARD,
    "run": permissions.RUN_NOW,
}


def detail(model_admin: JobAdmin, request: HttpRequest, object_id: str) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    job = _get_job(model_admin, object_id)
    shown = masking.displayed(job)
    state = job.state
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": f"Job #{job.pk}: {job.task_path}",
        "job": job,
        "state": state,
        "arguments": _pretty({"args": shown["args"], "kwargs": shown["kwargs"]}),
        "return_value": _pretty(shown["return_value"]),
        "attempt_errors": _attempt_errors(job),
        "timeline": timeline(job),
        "perms_granted": permissions.granted(request),
        "can_retry": state == JobState.FAILED,
        "can_run_now": state in (JobState.SCHEDULED, JobState.BLOCKED),
        "can_discard": state != JobState.CLAIMED,
    }
    return TemplateResponse(request, "admin/robust_queue/job/detail.html", context)


def action_view(model_admin: JobAdmin) -> Callable[..., HttpResponse]:
    @require_POST
    def view(request: HttpRequest, object_id: str, verb: str) -> HttpResponse:
        if verb not in VERBS:
            raise Http404
        permissions.require(request, VERBS[verb])
        job = _get_job(model_admin, object_id)
        if verb == "discard":
            return _discard(model_admin, request, job)
        jobs = Job.objects.using(job._state.db).filter(pk=job.pk)
        outcome = operations.retry(jobs) if verb == "retry" else operations.run_now(jobs)
        if outcome.changed:
            messages.success(request, f"Job #{job.pk} is ready to run.")
        else:
            messages.warning(
                request,
                f"Job #{job.pk} was not changed: it is {job.state.label.lower()} or a worker holds it.",
            )
        return HttpResponseRedirect(_url(model_admin, "change", job.pk))

    return view


def _discard(model_admin: JobAdmin, request: HttpRequest, job: Job) -> HttpResponse:
    try:
        discarded = job.discard()
    except UndiscardableError as exc:
        messages.error(request, str(exc))
        return HttpResponseRedirect(_url(model_admin, "change", job.pk))
    if discarded:
        messages.success(request, f"Job #{job.pk} was discarded.")
    else:
        messages.warning(request, f"Job #{job.pk} was not discarded: a worker holds it.")
    return HttpResponseRedirect(_url(model_admin, "changelist"))


def timeline(job: Job) -> list[tuple[dt.datetime, str]]:
    """What happened to ``job`` and when, oldest first."""
    events: list[tuple[dt.datetime | None, str]] = [
        (job.enqueued_at, f"Enqueued on queue {job.queue_name!r} with priority {job.priority}"),
        (job.run_after, "Due to run (run_after)"),
        (job.started_at, "First attempt started"),
    ]
    if len(job.worker_ids) > 1:
        events.append(
            (
                job.last_attempted_at,
                f"Attempt {len(job.worker_ids)} started by {job.worker_ids[-1]}",
            )
        )
    for accessor, label in (
        ("scheduled_execution", "Scheduled"),
        ("blocked_execution", "Blocked on concurrency key"),
        ("claimed_execution", "Claimed by a worker"),
        ("failed_execution", "Failed (no retry left)"),
        ("ready_execution", "Ready, waiting for a worker"),
    ):
        if hasattr(job, accessor):
            events.append((getattr(job, accessor).created_at, label))
    events.append((job.finished_at, "Finished"))
    return sorted(
        ((at, label) for at, label in events if at is not None), key=lambda event: event[0]
    )


def _attempt_errors(job: Job) -> list[dict[str, Any]]:
    return [
        {
            "attempt": number,
            "worker_id": job.worker_ids[number - 1] if number <= len(job.worker_ids) else "",
            "exception_class": error.get("exception_class_path", ""),
            "traceback": error.get("traceback", ""),
        }
        for number, error in enumerate(job.errors, start=1)
    ]


def _get_job(model_admin: JobAdmin, object_id: str) -> Job:
    if not str(object_id).isdigit():
        raise Http404
    jobs = Job.objects.using(model_admin.using).with_executions()
    return get_object_or_404(jobs.select_related("claimed_execution__process"), pk=int(object_id))


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)


def _url(model_admin: JobAdmin, name: str, *args: Any) -> str:
    opts = model_admin.opts
    return reverse(
        f"admin:{opts.app_label}_{opts.model_name}_{name}",
        args=args,
        current_app=model_admin.admin_site.name,
    )
