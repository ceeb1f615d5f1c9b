"""What a recurring task did lately: its last runs and their status."""

from __future__ import annotations

from django.urls import reverse
from django.utils.html import format_html, format_html_join

from ...models import Job, RecurringExecution
from ...models.job_state import EXECUTION_ACCESSORS
from .. import display
from ..jobs import columns

SHOWN_RUNS = 10


def last_runs(task_key: str, using: str, limit: int = SHOWN_RUNS) -> str:
    """A table of the newest ``limit`` slots of ``task_key``, each with its
    job and the job's state ("cleared" once retention removed it)."""
    slots = list(
        RecurringExecution.objects.using(using)
        .filter(task_key=task_key)
        .order_by("-run_at")[:limit]
    )
    if not slots:
        return format_html('<p class="rq-muted">{}</p>', "Never run by a scheduler.")
    jobs = _jobs(using, [slot.job_id for slot in slots if slot.job_id is not None])
    rows = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
        ((columns.moment(slot.run_at), *_job_cells(jobs.get(slot.job_id or 0))) for slot in slots),
    )
    return format_html(
        '<table class="rq-runs"><thead><tr><th>Slot</th><th>Job</th><th>Status</th></tr>'
        "</thead><tbody>{}</tbody></table>",
        rows,
    )


def state_badge(job: Job | None) -> str:
    """The job's state as the job lists show it."""
    if job is None:
        return format_html('<span class="rq-muted">{}</span>', "cleared")
    state = display.state_of(job)
    return format_html(
        '<span class="rq-state rq-state-{}">{}</span>',
        state.value if state else "none",
        state.label if state else display.NO_STATE,
    )


def job_of(using: str, job_id: int | None) -> Job | None:
    """The job with its execution rows, in one query; None if cleared."""
    if job_id is None:
        return None
    return _jobs(using, [job_id]).get(job_id)


def _jobs(using: str, job_ids: list[int]) -> dict[int, Job]:
    jobs = Job.objects.using(using).select_related(*EXECUTION_ACCESSORS.values())
    return {job.pk: job for job in jobs.filter(pk__in=job_ids)}


def _job_cells(job: Job | None) -> tuple[str, str]:
    if job is None:
        return "—", state_badge(None)
    url = reverse("admin:robust_queue_job_change", args=[job.pk])
    return format_html('<a href="{}">#{}</a>', url, job.pk), state_badge(job)
