"""Who did what to the queue: one Django ``LogEntry`` per admin action.

Entries show under the admin's "Recent actions" and, for one job, on its
page. A bulk action is one entry saying how many jobs it changed, and,
when it touched few jobs, one entry per job as well (its page lists it).
"""

from __future__ import annotations

import logging

from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db.models import Model, QuerySet

from ..models import Job

logger = logging.getLogger(__name__)
REPR_MAX = LogEntry._meta.get_field("object_repr").max_length or 200
SHOWN_ON_JOB_PAGE = 20


def record(
    user_id: int | None,
    message: str,
    job: Job | None = None,
    deleted: bool = False,
    subject: str = "",
    about: Model | None = None,
) -> None:
    """Write one entry (``job`` is the job acted on, if only one; ``about``
    another object acted on, such as a recurring task; ``deleted`` for a
    discard, which Django's admin shows as a deletion)."""
    logger.info("Admin action by user %s: %s", user_id, message)
    if user_id is None:
        return
    target = about if about is not None else job
    LogEntry.objects.create(
        user_id=user_id,
        content_type=ContentType.objects.get_for_model(type(target) if target else Job),
        object_id=str(target.pk) if target is not None else None,
        # "Recent actions" shows only this text: say what was done.
        object_repr=(subject or message)[:REPR_MAX],
        action_flag=DELETION if deleted else CHANGE,
        change_message=message,
    )


def record_each(
    user_id: int | None, jobs: list[tuple[int, str]], message: str, deleted: bool = False
) -> None:
    """One entry per job of a small bulk action (``(pk, task_path)`` each),
    so each job's page lists it; one INSERT. A discard is a deletion."""
    if user_id is None or not jobs:
        return
    content_type = ContentType.objects.get_for_model(Job)
    LogEntry.objects.bulk_create(
        LogEntry(
            user_id=user_id,
            content_type=content_type,
            object_id=str(pk),
            object_repr=f"Job #{pk} ({task_path})"[:REPR_MAX],
            action_flag=DELETION if deleted else CHANGE,
            change_message=message,
        )
        for pk, task_path in jobs
    )


def of_job(job: Job) -> QuerySet[LogEntry]:
    """The newest entries about ``job``."""
    return (
        LogEntry.objects.filter(
            content_type=ContentType.objects.get_for_model(Job), object_id=str(job.pk)
        )
        .select_related("user")
        .order_by("-action_time")[:SHOWN_ON_JOB_PAGE]
    )
