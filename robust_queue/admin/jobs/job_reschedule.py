"""The jobs list's "Reschedule" action: a page asks for the new time (and
shows how many of the selected jobs are scheduled or failed), then moves
them (``rescheduling.py``). Permission ``reschedule_job``; one LogEntry per
job moved.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.admin import helpers
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from ...compat import TaskResultDoesNotExist
from ...exceptions import NotReschedulableError
from ...models import Job
from .. import audit, pages
from ..display import number
from ..jobs_context import JobsContext

# One request moves at most this many jobs; narrow the filter for more.
MAX_JOBS = 500
APPLIES_TO = Q(scheduled_execution__isnull=False) | Q(failed_execution__isnull=False)


class RescheduleForm(forms.Form):
    # Read in the current time zone (TIME_ZONE), made aware by the field.
    run_at = forms.DateTimeField(
        label="Run at",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        input_formats=[
            "%Y-%m-%dT%H:%M",
            "%Y-%m-%dT%H:%M:%S",
            "%Y-%m-%d %H:%M",
            "%Y-%m-%d %H:%M:%S",
        ],
        help_text="In the site's time zone. A time that has passed makes the jobs ready now.",
    )


def handle(jobs: JobsContext, request: HttpRequest, queryset: QuerySet[Job]) -> HttpResponse | None:
    """The page that asks for a time, or (once confirmed) the move (the
    action ``JobAdmin.reschedule_selected``)."""
    selected = queryset.filter(APPLIES_TO).order_by("pk")
    form = RescheduleForm(request.POST if request.POST.get("confirm") == "yes" else None)
    count = selected.count()
    if count > MAX_JOBS:
        messages.error(
            request,
            f"{number(count)} scheduled or failed jobs are selected; reschedule at most "
            f"{number(MAX_JOBS)} at a time (narrow the filter).",
        )
        return None
    if not form.is_bound or not form.is_valid() or not count:
        return _ask(jobs, request, form, count)
    _move(request, list(selected), form.cleaned_data["run_at"])
    return None


def _move(request: HttpRequest, selected: list[Job], run_at: Any) -> None:
    moved, skipped = 0, 0
    for job in selected:
        try:
            due = job.reschedule(run_at)
        except (NotReschedulableError, TaskResultDoesNotExist):
            skipped += 1
            continue
        moved += 1
        audit.record(
            request.user.pk,
            f"Rescheduled job #{job.pk} ({job.task_path}) to {due.isoformat()}.",
            job,
        )
    message = f"Rescheduled {number(moved)} of {number(len(selected))} job(s)."
    if skipped:
        message += f" {number(skipped)} skipped (no longer scheduled or failed)."
    messages.add_message(request, messages.SUCCESS if moved else messages.WARNING, message)


def _ask(
    jobs: JobsContext, request: HttpRequest, form: RescheduleForm, count: int
) -> TemplateResponse:
    title = f"Reschedule: {number(count)} job(s)?"
    crumbs = [(jobs.jobs_url(), "Jobs"), ("", "Reschedule")]
    context = {
        **pages.context(jobs, request, title, crumbs),
        "form": form,
        "count": count,
        "count_shown": number(count),
        "now": timezone.localtime(),
        "action": request.POST.get("action", ""),
        "across": request.POST.get("select_across") == "1",
        "selected": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
        "back_url": request.get_full_path(),
    }
    return TemplateResponse(request, "admin/robust_queue/job/reschedule.html", context)
