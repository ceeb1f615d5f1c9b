"""Pausing and resuming a task from the admin (its jobs stay ready).

The task path comes in the form, not the URL; the control sits on the job
page and the paused tasks are listed on the overview. Its own permission
(``pause_task``); each change writes a ``LogEntry``.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseRedirect,
)
from django.views.decorators.http import require_POST

from ...exceptions import InvalidTaskPathError
from ...models import Job, TaskPause
from .. import audit, display, permissions
from ..jobs_context import JobsContext

VERBS = ("pause", "resume")
# The overview lists at most this many paused tasks.
SHOWN = 100


def paused(using: str) -> list[TaskPause]:
    """The paused tasks, oldest pause first."""
    return list(TaskPause.objects.using(using).order_by("created_at", "pk")[:SHOWN])


def view_for(jobs: JobsContext) -> Callable[..., HttpResponse]:
    """POST ``tasks/<pause|resume>/`` with ``task`` (and ``job``, the page
    to go back to); 403 without the permission."""

    @require_POST
    def view(request: HttpRequest, verb: str) -> HttpResponse:
        if verb not in VERBS:
            raise Http404
        jobs.require(request, permissions.PAUSE_TASK)
        task_path = request.POST.get("task")
        if task_path is None:
            return HttpResponseBadRequest("No task named.")
        job = _job(jobs, request.POST.get("job"))
        pauses = TaskPause.objects.using(jobs.using)
        try:
            changed = pauses.pause(task_path) if verb == "pause" else pauses.resume(task_path)
        except InvalidTaskPathError as exc:
            messages.error(request, str(exc))
        else:
            _report(request, verb, task_path, changed, job)
        return HttpResponseRedirect(_back(jobs, job))

    return view


def _report(
    request: HttpRequest, verb: str, task_path: str, changed: bool, job: Job | None
) -> None:
    shown = display.text(task_path)
    if not changed:
        messages.info(request, f"Task {shown} was already {verb}d.")
        return
    # On the job's page's audit trail too when paused from there.
    audit.record(request.user.pk, f"{verb.capitalize()}d task {shown}.", job)
    messages.success(request, f"Task {shown} {verb}d.")


def _job(jobs: JobsContext, job_id: str | None) -> Job | None:
    if job_id is None or not display.is_id(job_id):
        return None
    return Job.objects.using(jobs.using).filter(pk=int(job_id)).first()


def _back(jobs: JobsContext, job: Job | None) -> str:
    if job is not None:
        return jobs.url("change", job.pk)
    return jobs.named_url("robust_queue_overview")
