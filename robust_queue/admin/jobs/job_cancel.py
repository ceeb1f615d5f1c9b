"""Cancelling one job from its page: GET asks, POST acts."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse

from ...compat import TaskResultDoesNotExist
from ...exceptions import NotCancellableError
from ...models import Job, JobState
from ...operations.cancellation import CancelOutcome
from .. import audit, pages
from ..jobs_context import JobsContext

CANCELLABLE = (JobState.READY, JobState.SCHEDULED, JobState.BLOCKED, JobState.CLAIMED)


def cancel_view(
    jobs: JobsContext, request: HttpRequest, job: Job, crumbs: list[pages.Crumb]
) -> HttpResponse:
    """The confirmation page (GET) or the cancel itself (POST)."""
    page = jobs.url("change", job.pk)
    if request.method != "POST":
        title = f"Cancel job #{job.pk}?"
        context = {
            **pages.context(jobs, request, title, [*crumbs, ("", "Cancel")]),
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
