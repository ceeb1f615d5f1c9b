"""Cancelling one job from its page: GET asks, POST acts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from ..compat import TaskResultDoesNotExist
from ..exceptions import NotCancellableError
from ..models import Job, JobState
from ..operations.cancellation import CancelOutcome
from . import audit, pages

if TYPE_CHECKING:
    from .jobs import JobAdmin

CANCELLABLE = (JobState.READY, JobState.SCHEDULED, JobState.BLOCKED, JobState.CLAIMED)


def cancel_view(
    model_admin: JobAdmin, request: HttpRequest, job: Job, crumbs: list[pages.Crumb]
) -> HttpResponse:
    """The confirmation page (GET) or the cancel itself (POST)."""
    page = _url(model_admin, job)
    if request.method != "POST":
        title = f"Cancel job #{job.pk}?"
        context = {
            **pages.context(model_admin, request, title, [*crumbs, ("", "Cancel")]),
            "job": job,
            "running": hasattr(job, "claimed_execution"),
        }
        return TemplateResponse(request, "admin/robust_queue/job/cancel.html", context)
    try:
        outcome = job.cancel()
    except (NotCancellableError, TaskResultDoesNotExist) as exc:
        messages.error(request, str(exc))
        return HttpResponseRedirect(page)
    if outcome is CancelOutcome.CANCELLED:
        done = f"Cancelled job #{job.pk} ({job.task_path})."
        messages.success(request, f"Job #{job.pk} was cancelled.")
    else:
        done = f"Asked running job #{job.pk} ({job.task_path}) to stop."
        messages.success(request, f"Job #{job.pk} is running: its worker will stop it.")
    audit.record(request.user.pk, done, job)
    return HttpResponseRedirect(page)


def _url(model_admin: JobAdmin, job: Job) -> str:
    opts = model_admin.opts
    return reverse(
        f"admin:{opts.app_label}_{opts.model_name}_change",
        args=[job.pk],
        current_app=model_admin.admin_site.name,
    )
