"""The job list's columns and order, one set per state.

Each state shows what an operator looks for first: failed -- newest
failure, exception and message, attempts; scheduled -- run at, soonest
first, overdue; running -- started, running for, worker; blocked --
concurrency key and blocked since; finished -- duration and wait.
Times are relative ("12 s ago"), the exact time in a tooltip.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from ...models import Job, JobState
from .. import display, pages
from ..masking import values as masking
from . import job_progress, rate_waits, waiting
from .filters import state_of

COMMON = ("job", "task", "queue")
LIST_DISPLAY: dict[str, tuple[str, ...]] = {
    "": (*COMMON, "state_badge", "enqueued", "attempts"),
    JobState.READY: (*COMMON, "priority", "enqueued", "waiting_for"),
    JobState.SCHEDULED: (*COMMON, "priority", "run_at"),
    JobState.CLAIMED: (*COMMON, "started", "running_for", "progress_shown", "worker"),
    JobState.BLOCKED: (*COMMON, "concurrency", "blocked_since"),
    JobState.FAILED: (*COMMON, "failed_at", "exception", "attempts"),
    JobState.FINISHED: (*COMMON, "finished", "run_time", "wait"),
}
# Each order is served by an index: the execution table's id or its time.
ORDERING: dict[str, tuple[str, ...]] = {
    # The job id, read from the small execution table: the planner walks
    # its index, not the job table's past every finished job.
    JobState.READY: ("-ready_execution__job_id",),
    JobState.CLAIMED: ("-claimed_execution__job_id",),
    JobState.SCHEDULED: ("scheduled_execution__scheduled_at", "pk"),
    JobState.FAILED: ("-failed_execution__id",),
    JobState.FINISHED: ("-finished_at",),
    JobState.BLOCKED: ("blocked_execution__id",),
}
MESSAGE_MAX = 160
# The annotation holding the database's clock (jobs.py).
DB_NOW = "rq_db_now"
# The lists whose columns compare with the clock.
CLOCKED_STATES = (JobState.READY, JobState.SCHEDULED, JobState.CLAIMED)


def list_display_for(request: HttpRequest) -> tuple[str, ...]:
    return LIST_DISPLAY.get(state_of(request), LIST_DISPLAY[""])


def ordering_for(request: HttpRequest) -> tuple[str, ...]:
    return ORDERING.get(state_of(request), ("-pk",))


def moment(value: dt.datetime | None) -> str:
    """``<time>`` reading "3 min ago", the exact local time in a tooltip."""
    if value is None:
        return "—"
    exact = timezone.localtime(value).strftime("%Y-%m-%d %H:%M:%S")
    return format_html(
        '<time datetime="{}" title="{}">{}</time>', value.isoformat(), exact, display.ago(value)
    )


def database_now_of(obj: Job) -> dt.datetime:
    """The database's time the row was read at (``DB_NOW``, annotated by
    the lists that compare with it); this host's if not annotated."""
    value = getattr(obj, DB_NOW, None)
    return value if isinstance(value, dt.datetime) else timezone.now()


def _execution(obj: Job, accessor: str) -> Any:
    return getattr(obj, accessor, None)


class ColumnsMixin:
    """Column methods of the job list (see ``LIST_DISPLAY``)."""

    @admin.display(description="Job", ordering="pk")
    def job(self, obj: Job) -> str:
        return f"#{obj.pk}"

    @admin.display(description="Task")
    def task(self, obj: Job) -> str:
        """The task's name, linked to its page (figures over time)."""
        return format_html(
            '<a class="rq-task" href="{}" title="{}">{}</a>',
            pages.task_url(obj.task_path),
            obj.task_path,
            obj.task_path.rpartition(".")[2],
        )

    @admin.display(description="Queue")
    def queue(self, obj: Job) -> str:
        if obj.group_key is None:
            return obj.queue_name
        # A fair group (robust_queue.fair_group) beside its queue.
        return format_html(
            '{} <span class="rq-muted rq-group" title="fair group">· {}</span>',
            obj.queue_name,
            obj.group_key,
        )

    @admin.display(description="State")
    def state_badge(self, obj: Job) -> str:
        state = display.state_of(obj)
        if state is None:
            return format_html('<span class="rq-state rq-state-none">{}</span>', display.NO_STATE)
        return format_html('<span class="rq-state rq-state-{}">{}</span>', state.value, state.label)

    @admin.display(description="Enqueued", ordering="enqueued_at")
    def enqueued(self, obj: Job) -> str:
        return moment(obj.enqueued_at)

    @admin.display(description="Waiting for")
    def waiting_for(self, obj: Job) -> str:
        ready = _execution(obj, "ready_execution")
        return display.duration(database_now_of(obj) - ready.created_at) if ready else "—"

    @admin.display(description="Runs", ordering="scheduled_execution__scheduled_at")
    def run_at(self, obj: Job) -> str:
        scheduled = _execution(obj, "scheduled_execution")
        if scheduled is None:
            return "—"
        # Due by the dispatcher's clock (the database's), not this host's.
        if scheduled.scheduled_at <= database_now_of(obj):
            return format_html(
                '{} <span class="rq-overdue">overdue</span>', moment(scheduled.scheduled_at)
            )
        return moment(scheduled.scheduled_at)

    @admin.display(description="Started")
    def started(self, obj: Job) -> str:
        return moment(obj.last_attempted_at)

    @admin.display(description="Running for")
    def running_for(self, obj: Job) -> str:
        return display.span(obj.last_attempted_at, database_now_of(obj))

    @admin.display(description="Progress")
    def progress_shown(self, obj: Job) -> str:
        return job_progress.shown(obj)

    @admin.display(description="Worker")
    def worker(self, obj: Job) -> str:
        claimed = _execution(obj, "claimed_execution")
        if claimed is None or claimed.process_id is None:
            return "—"
        url = reverse("admin:robust_queue_process_change", args=[claimed.process_id])
        return format_html('<a href="{}">process {}</a>', url, claimed.process_id)

    @admin.display(description="Concurrency key")
    def concurrency(self, obj: Job) -> str:
        """The key, linked to its semaphore and blocked jobs (by job id: a
        masked key never goes in a URL); "waiting on N jobs" for a job
        that waits on others; "rate limited: <key> (N per <window>)" and
        when its next window opens for a job over its rate limit."""
        if waiting.is_waiting(obj):
            return waiting.waiting_label(waiting.waiting_count(obj))
        rate = rate_waits.rate_wait(obj)
        if rate is not None:
            label = format_html('<a href="{}">{}</a>', rate.url, rate.label)
            if rate.opens is None:
                return label
            return format_html("{} · next window {}", label, moment(rate.opens))
        url = reverse("admin:robust_queue_concurrency") + f"?job={obj.pk}#rq-key"
        return format_html('<a href="{}">{}</a>', url, masking.shown_concurrency_key(obj) or "—")

    @admin.display(description="Blocked since", ordering="blocked_execution__id")
    def blocked_since(self, obj: Job) -> str:
        blocked = _execution(obj, "blocked_execution")
        return moment(blocked.created_at) if blocked else "—"

    @admin.display(description="Failed", ordering="failed_execution__created_at")
    def failed_at(self, obj: Job) -> str:
        failed = _execution(obj, "failed_execution")
        return moment(failed.created_at) if failed else "—"

    @admin.display(description="Attempts")
    def attempts(self, obj: Job) -> int:
        return len(display.worker_ids(obj))

    @admin.display(description="Exception")
    def exception(self, obj: Job) -> str:
        name = display.text(getattr(obj, "exception_class", None) or "").rpartition(".")[2]
        message = masking.error_message(obj, getattr(obj, "error_traceback", None))
        for prefix in (f"{getattr(obj, 'exception_class', '')}: ", f"{name}: "):
            message = message.removeprefix(prefix)
        if len(message) > MESSAGE_MAX:
            message = message[: MESSAGE_MAX - 1] + "…"
        return format_html(
            '<span class="rq-exception">{}</span><span class="rq-message">{}</span>', name, message
        )

    @admin.display(description="Finished", ordering="finished_at")
    def finished(self, obj: Job) -> str:
        return moment(obj.finished_at)

    @admin.display(description="Ran for")
    def run_time(self, obj: Job) -> str:
        return display.span(obj.last_attempted_at, obj.finished_at)

    @admin.display(description="Waited")
    def wait(self, obj: Job) -> str:
        due = max(filter(None, (obj.run_after, obj.enqueued_at)), default=None)
        return display.span(due, obj.started_at)
