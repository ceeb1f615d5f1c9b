"""Running a recurring task now from the admin, with its audit entries.

Permission ``run_job_now`` (checked by the caller). Each run writes a
``LogEntry`` on the recurring task (its History, "Recent actions") and one
on the job it enqueued (listed on the job's page).
"""

from __future__ import annotations

import logging

from django.contrib import messages
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from ...exceptions import RobustQueueError
from ...models import RecurringTask
from .. import audit

logger = logging.getLogger(__name__)


def run_now(request: HttpRequest, recurring_task: RecurringTask) -> None:
    """Enqueue ``recurring_task`` now; says how it went in a message."""
    key = recurring_task.key
    try:
        job = recurring_task.run_now()
    except (RobustQueueError, TypeError, ValueError) as exc:
        messages.error(request, f"Recurring task {key}: could not enqueue: {exc}")
        return
    if job is None:
        messages.warning(request, f"Recurring task {key}: discarded by its concurrency limit.")
        return
    logger.info("Recurring task %s run now by %s: job %s", key, request.user, job.pk)
    message = f"Ran recurring task {key} now: job #{job.pk}."
    audit.record(request.user.pk, message, about=recurring_task)
    audit.record_each(request.user.pk, [(job.pk, job.task_path)], message)
    url = reverse("admin:robust_queue_job_change", args=[job.pk])
    # Django's message template capitalises the first letter: the key
    # (case matters) never comes first.
    messages.success(
        request,
        format_html('Recurring task {}: enqueued as <a href="{}">job #{}</a>.', key, url, job.pk),
    )
