"""Editing a waiting job from its page: GET shows the form, filled with the
job's values; POST applies the fields that changed (``edit_job``).
Permission ``edit_job``; one audit entry naming the fields changed (never
their values: arguments may hold secrets).

Arguments are edited as their stored JSON (a tagged value such as a
datetime stays tagged). A job whose arguments the admin masks keeps them
as they are here: the page shows them masked, the form has no field for
them, and they are edited from code only.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.utils import timezone

from ...arguments import decode_arguments
from ...compat import TASK_MAX_PRIORITY, TASK_MIN_PRIORITY, InvalidTask, TaskResultDoesNotExist
from ...exceptions import NotEditableError, RobustQueueError
from ...models import Job
from ...models.job_state import WAITING_STATES
from ...operations.editing import edit_job
from .. import audit, display, pages
from ..jobs_context import JobsContext
from ..masking import values as masking

DATETIME_INPUT = "%Y-%m-%dT%H:%M"


class EditForm(forms.Form):
    args = forms.CharField(
        label="Positional arguments",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80, "spellcheck": "false"}),
        help_text="A JSON list, as stored.",
    )
    kwargs = forms.CharField(
        label="Keyword arguments",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80, "spellcheck": "false"}),
        help_text="A JSON object, as stored.",
    )
    priority = forms.IntegerField(
        min_value=TASK_MIN_PRIORITY,
        max_value=TASK_MAX_PRIORITY,
        help_text=f"{TASK_MIN_PRIORITY} to {TASK_MAX_PRIORITY}; higher runs first.",
    )
    queue_name = forms.CharField(label="Queue", max_length=64)
    run_after = forms.DateTimeField(
        label="Run after",
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format=DATETIME_INPUT),
        input_formats=[DATETIME_INPUT, "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S"],
        help_text="In the site's time zone; empty: as soon as a worker is free.",
    )
    tags = forms.CharField(required=False, help_text="Comma-separated.")

    def clean_args(self) -> list[Any]:
        value: list[Any] = _json(self.cleaned_data["args"] or "[]", list, "a JSON list")
        return value

    def clean_kwargs(self) -> dict[str, Any]:
        value: dict[str, Any] = _json(self.cleaned_data["kwargs"] or "{}", dict, "a JSON object")
        return value

    def clean_tags(self) -> list[str]:
        return [tag.strip() for tag in self.cleaned_data["tags"].split(",") if tag.strip()]


def _json(text: str, kind: type, what: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise forms.ValidationError(f"Not valid JSON: {exc}.") from exc
    if not isinstance(value, kind):
        raise forms.ValidationError(f"Must be {what}, not {type(value).__name__}.")
    return value


def edit_view(
    jobs: JobsContext, request: HttpRequest, job: Job, crumbs: list[pages.Crumb]
) -> HttpResponse:
    """The form (GET, or a POST with errors) or the edit itself (POST)."""
    page = jobs.url("change", job.pk)
    state = display.state_of(job)
    if request.method != "POST" and state not in WAITING_STATES:
        label = state.label.lower() if state else "in no state"
        messages.error(
            request,
            f"Job #{job.pk} is {label}: only a waiting (ready, scheduled or blocked) "
            "job can be edited.",
        )
        return HttpResponseRedirect(page)
    masked = _masked_arguments(job)
    form = _form(job, request.POST if request.method == "POST" else None, masked)
    if form.is_bound and form.is_valid():
        changes = _changes(job, form, masked is not None)
        if not changes:
            messages.info(request, f"Job #{job.pk} was not changed: no field differs.")
            return HttpResponseRedirect(page)
        try:
            edit_job(job.result_id, backend=job.backend_alias, **_values(changes))
        except (NotEditableError, TaskResultDoesNotExist) as exc:
            messages.error(request, str(exc))
            return HttpResponseRedirect(page)
        except (TypeError, ValueError, InvalidTask, RobustQueueError) as exc:
            form.add_error(None, str(exc))
        else:
            done = f"Edited job #{job.pk} ({job.task_path}): {', '.join(changes)}."
            audit.record(request.user.pk, done, job, verb="edit")
            messages.success(request, f"Job #{job.pk} was edited: {', '.join(changes)}.")
            return HttpResponseRedirect(page)
    context = {
        **pages.context(jobs, request, f"Edit job #{job.pk}", [*crumbs, ("", "Edit")]),
        "job": job,
        "form": form,
        "masked": masked,
        "now": timezone.localtime(),
    }
    return TemplateResponse(request, "admin/robust_queue/job/edit.html", context)


def _form(job: Job, data: Any, masked: str | None) -> EditForm:
    run_after = job.run_after and timezone.localtime(job.run_after).replace(second=0, microsecond=0)
    initial = {
        "args": json.dumps(job.args, ensure_ascii=False),
        "kwargs": json.dumps(job.kwargs, ensure_ascii=False),
        "priority": job.priority,
        "queue_name": job.queue_name,
        "run_after": run_after,
        "tags": ", ".join(job.tag_names()),
    }
    form = EditForm(data, initial=initial)
    if masked is not None:
        # Shown masked by the page instead, never sent back.
        del form.fields["args"], form.fields["kwargs"]
    return form


def _masked_arguments(job: Job) -> str | None:
    """The arguments as the job page shows them, if masking hides any
    (or they cannot be decoded); None when they are shown as stored."""
    try:
        shown = masking.displayed(job)
        plain = display.decoded_arguments(job.arguments)
    except RobustQueueError:
        return masking.shown(job).arguments
    if (shown["args"], shown["kwargs"]) != plain:
        return masking.shown(job).arguments
    return None


def _changes(job: Job, form: EditForm, masked: bool) -> dict[str, Any]:
    """The fields whose value differs from the job's, by name."""
    data = form.cleaned_data
    changes: dict[str, Any] = {}
    if not masked and data["args"] != job.args:
        changes["args"] = data["args"]
    if not masked and data["kwargs"] != job.kwargs:
        changes["kwargs"] = data["kwargs"]
    for name in ("priority", "queue_name", "run_after"):
        if name in form.changed_data:
            changes[name] = data[name]
    if sorted(set(data["tags"])) != job.tag_names():
        changes["tags"] = data["tags"]
    return changes


def _values(changes: dict[str, Any]) -> dict[str, Any]:
    """``changes`` as ``edit_job`` takes them: stored JSON arguments
    decoded back to values (a model reference fetched, so a missing row
    is an error here)."""
    values = dict(changes)
    if "args" in changes or "kwargs" in changes:
        stored = {"args": changes.get("args", []), "kwargs": changes.get("kwargs", {})}
        args, kwargs = decode_arguments(stored)
        if "args" in changes:
            values["args"] = args
        if "kwargs" in changes:
            values["kwargs"] = kwargs
    return values
