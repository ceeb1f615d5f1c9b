"""The job page and its one-job actions (retry, discard, run now, cancel, edit)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from ...exceptions import UndiscardableError
from ...models import Job, JobState, TaskPause
from ...models.job_state import WAITING_STATES
from ...operations import bulk
from .. import audit, display, pages, permissions
from ..bulk_task import bulk_operation
from ..jobs_context import JobsContext
from ..masking import values as masking
from . import (
    job_cancel,
    job_durations,
    job_edit,
    job_progress,
    job_steps,
    rate_waits,
    unique_keys,
    waiting,
)
from .attempt_logs import attempt_logs
from .attempts import Attempt, attempts_of, labelled_errors
from .row_actions import next_url
from .tracebacks import with_parts

OPERATION_TASK_PATH = bulk_operation.module_path
VERBS = {
    "retry": permissions.RETRY,
    "discard": permissions.DISCARD,
    "run": permissions.RUN_NOW,
    "cancel": permissions.CANCEL,
    "edit": permissions.EDIT,
}


def detail(jobs: JobsContext, request: HttpRequest, object_id: str) -> HttpResponse:
    jobs.require_view(request)
    job = _get_job(jobs, object_id)
    shown = masking.shown(job)
    state = display.state_of(job)
    worker_ids = display.worker_ids(job)
    attempts = attempts_of(job, shown.errors, state)
    now = timezone.now()
    context = {
        **pages.context(
            jobs,
            request,
            f"Job #{job.pk}: {display.text(job.task_path)}",
            _crumbs(jobs, job, state),
        ),
        "job": job,
        "state": state,
        "state_label": state.label if state else display.NO_STATE,
        "shown": shown,
        "worker_ids": worker_ids,
        "attempt_errors": with_parts(labelled_errors(shown.errors, worker_ids)),
        "attempts": attempts,
        "attempt_logs": attempt_logs(job),
        "timeline": timeline(job, attempts),
        "waited": job_durations.waited(job, state, now),
        "ran_for": job_durations.ran_for(job, state, attempts, now),
        "unrecorded_attempts": any(
            a.outcome != "running" and (a.started is None or a.ended is None) for a in attempts
        ),
        "can_retry": state == JobState.FAILED,
        "can_run_now": state in (JobState.SCHEDULED, JobState.BLOCKED),
        "can_discard": state != JobState.CLAIMED,
        "can_cancel": state in job_cancel.CANCELLABLE,
        "can_edit": state in WAITING_STATES,
        "cancel_requested": _cancel_requested(job),
        "operation": _operation_progress(job),
        "progress": job_progress.shown(job) if job.progress is not None else None,
        "steps": job_steps.shown(job),
        "audit_entries": audit.of_job(job),
        "unique_key": unique_keys.of_job(job),
        "waiting_on": waiting.waiting_on(job),
        "rate_wait": rate_waits.rate_wait(job),
        "task_paused": TaskPause.objects.using(job._state.db).is_paused(job.task_path),
    }
    return TemplateResponse(request, "admin/robust_queue/job/detail.html", context)


def action_view(jobs: JobsContext) -> Callable[..., HttpResponse]:
    @require_http_methods(["GET", "POST"])
    def view(request: HttpRequest, object_id: str, verb: str) -> HttpResponse:
        if verb not in VERBS:
            raise Http404
        jobs.require(request, VERBS[verb])
        job = _get_job(jobs, object_id)
        if verb == "discard":
            return _discard(jobs, request, job)
        if verb in ("cancel", "edit"):
            crumbs = [
                *_crumbs(jobs, job, display.state_of(job))[:-1],
                (jobs.url("change", job.pk), f"#{job.pk}"),
            ]
            if verb == "edit":
                return job_edit.edit_view(jobs, request, job, crumbs)
            return job_cancel.cancel_view(jobs, request, job, crumbs)
        if request.method != "POST" and verb == "run" and hasattr(job, "blocked_execution"):
            return _confirm_run_blocked(jobs, request, job)
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        one = Job.objects.using(job._state.db).filter(pk=job.pk)
        outcome = bulk.retry(one) if verb == "retry" else bulk.run_now(one)
        if outcome.changed:
            done = "Retried" if verb == "retry" else "Ran now"
            audit.record(request.user.pk, f"{done} job #{job.pk} ({job.task_path}).", job)
            messages.success(request, f"Job #{job.pk} is ready to run.")
        else:
            state = display.state_of(job)
            label = state.label.lower() if state else "in no state"
            messages.warning(
                request, f"Job #{job.pk} was not changed: it is {label} or a worker holds it."
            )
        # Back to the list a row's button was pressed on, if so.
        return HttpResponseRedirect(next_url(request) or jobs.url("change", job.pk))

    return view


def _discard(jobs: JobsContext, request: HttpRequest, job: Job) -> HttpResponse:
    """GET asks (a page, no script: a strict CSP cannot skip it); POST acts."""
    if request.method != "POST":
        crumbs = [
            *_crumbs(jobs, job, display.state_of(job))[:-1],
            (jobs.url("change", job.pk), f"#{job.pk}"),
            ("", "Discard"),
        ]
        title = f"Discard job #{job.pk}?"
        context = {
            **pages.context(jobs, request, title, crumbs),
            "job": job,
            "next": next_url(request),
        }
        return TemplateResponse(request, "admin/robust_queue/job/discard.html", context)
    try:
        discarded = job.discard()
    except UndiscardableError as exc:
        messages.error(request, str(exc))
        return HttpResponseRedirect(next_url(request) or jobs.url("change", job.pk))
    if discarded:
        audit.record(
            request.user.pk, f"Discarded job #{job.pk} ({job.task_path}).", job, deleted=True
        )
        messages.success(request, f"Job #{job.pk} was discarded.")
    else:
        messages.warning(request, f"Job #{job.pk} was not discarded: a worker holds it.")
    return HttpResponseRedirect(next_url(request) or jobs.url("changelist"))


def _confirm_run_blocked(jobs: JobsContext, request: HttpRequest, job: Job) -> HttpResponse:
    """Running a blocked job now breaks its concurrency limit: ask first."""
    crumbs = [
        *_crumbs(jobs, job, JobState.BLOCKED)[:-1],
        (jobs.url("change", job.pk), f"#{job.pk}"),
        ("", "Run now"),
    ]
    title = f"Run blocked job #{job.pk} now?"
    context = {
        **pages.context(jobs, request, title, crumbs),
        "job": job,
        "key": masking.shown_concurrency_key(job),
    }
    return TemplateResponse(request, "admin/robust_queue/job/run_blocked.html", context)


def timeline(job: Job, attempts: list[Attempt]) -> list[tuple[dt.datetime, str]]:
    """What happened to ``job`` and when, oldest first: every attempt whose
    start or end the row records, and the execution it is in now."""
    events: list[tuple[dt.datetime | None, str]] = [
        (job.enqueued_at, f"Enqueued on queue {job.queue_name!r} with priority {job.priority}"),
        (job.run_after, "Due to run (run_after)"),
    ]
    for attempt in attempts:
        on = f" on {attempt.worker_id}" if attempt.worker_id else ""
        events.append((attempt.started, f"Attempt {attempt.number} started{on}"))
        events.append((attempt.ended, f"Attempt {attempt.number} {attempt.outcome}"))
    for accessor, label in (
        ("scheduled_execution", "Scheduled"),
        ("blocked_execution", _blocked_label(job)),
        ("claimed_execution", "Claimed by a worker"),
        ("ready_execution", "Ready, waiting for a worker"),
    ):
        if hasattr(job, accessor):
            events.append((getattr(job, accessor).created_at, label))
    return sorted(
        ((at, label) for at, label in events if at is not None), key=lambda event: event[0]
    )


def _blocked_label(job: Job) -> str:
    if waiting.is_waiting(job):
        return "Waiting on other jobs"
    if rate_waits.is_rate_limited(job):
        return "Waiting on its rate limit"
    return "Blocked on concurrency key"


def _cancel_requested(job: Job) -> bool:
    return (
        hasattr(job, "claimed_execution") and job.claimed_execution.cancel_requested_at is not None
    )


def _get_job(jobs: JobsContext, object_id: str) -> Job:
    if not display.is_id(object_id):
        raise Http404
    rows = Job.objects.using(jobs.using).with_executions()
    return get_object_or_404(rows.select_related("claimed_execution__process"), pk=int(object_id))


def _operation_progress(job: Job) -> dict[str, Any] | None:
    """For a bulk operation's own job: how far it got (its return value)."""
    if job.task_path != OPERATION_TASK_PATH:
        return None
    value = job.return_value if isinstance(job.return_value, dict) else {}
    return {
        key: display.number(value[key]) if isinstance(value.get(key), int) else "—"
        for key in ("done", "changed", "counted")
    }


def _crumbs(jobs: JobsContext, job: Job, state: JobState | None) -> list[pages.Crumb]:
    crumbs = [(jobs.jobs_url(), "Jobs")]
    if state is not None:
        crumbs.append((jobs.jobs_url(f"state={state.value}"), str(state.label)))
    return [*crumbs, ("", f"#{job.pk}")]
