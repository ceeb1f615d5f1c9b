"""Who did what to the queue: one Django ``LogEntry`` per admin action,
and one ``QueueAction`` row.

Entries show under the admin's "Recent actions" (the current user's own)
and, for one job, on its page. A bulk action is one entry saying how many
jobs it changed, and, when it touched few jobs, one entry per job as well
(its page lists it). The ``QueueAction`` rows are everyone's actions in one
place (the "Queue actions" page, ``actions.py``): who, which action, how
many jobs, on which queue, when.
"""

from __future__ import annotations

import logging
import re

from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db.models import Model, QuerySet

from .. import conf
from ..models import Job, QueueAction

logger = logging.getLogger(__name__)
REPR_MAX = LogEntry._meta.get_field("object_repr").max_length or 200
SHOWN_ON_JOB_PAGE = 20
# The action a message names, when its caller does not say (its first words).
VERB_OF_MESSAGE = (
    ("Retried", "retry"),
    ("Retry", "retry"),
    ("Discarded", "discard"),
    ("Discard", "discard"),
    ("Ran recurring", "run recurring task now"),
    ("Ran now", "run now"),
    ("Made ready", "run now"),
    ("Run now", "run now"),
    ("Cancelled", "cancel"),
    ("Cancel", "cancel"),
    ("Asked running", "cancel"),
    ("Rescheduled", "reschedule"),
    ("Reschedule", "reschedule"),
    ("Paused queue", "pause queue"),
    ("Resumed queue", "resume queue"),
    ("Paused task", "pause task"),
    ("Resumed task", "resume task"),
)
# "Retried 1,200 of 1,250 job(s)": how many jobs a bulk message says changed.
CHANGED_OF = re.compile(r"([\d,]+) of [\d,]+ job")


def record(
    user_id: int | None,
    message: str,
    job: Job | None = None,
    deleted: bool = False,
    subject: str = "",
    about: Model | None = None,
    *,
    verb: str = "",
    count: int | None = None,
    queue: str = "",
) -> None:
    """Write one entry (``job`` is the job acted on, if only one; ``about``
    another object acted on, such as a recurring task; ``deleted`` for a
    discard, which Django's admin shows as a deletion) and its
    ``QueueAction`` row: ``verb`` (the action, else read off the message),
    ``count`` (jobs changed: 1 for ``job``, else read off "N of M job(s)")
    and ``queue`` (the job's, when one)."""
    logger.info("Admin action by user %s: %s", user_id, message)
    if user_id is None:
        return
    if job is not None:
        count = 1 if count is None else count
        queue = queue or job.queue_name
    QueueAction.objects.using(conf.queue_database()).record(
        user_id=user_id,
        username=_username(user_id),
        verb=verb or _verb_of(message),
        message=message,
        count=count if count is not None else _count_of(message),
        queue_name=queue,
        job_id=job.pk if job is not None else None,
    )
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


def _username(user_id: int) -> str:
    """The user's name now (kept on the row: users live in another database)."""
    User = get_user_model()
    name = User._default_manager.filter(pk=user_id).values_list(User.USERNAME_FIELD, flat=True)
    return str(name.first() or f"user #{user_id}")


def _verb_of(message: str) -> str:
    for prefix, verb in VERB_OF_MESSAGE:
        if message.startswith(prefix):
            return verb
    if message.startswith("Recurring task"):
        return "enable recurring task" if message.endswith("enabled.") else "disable recurring task"
    return message.split(" ", 1)[0].lower()


def _count_of(message: str) -> int | None:
    found = CHANGED_OF.search(message)
    return int(found.group(1).replace(",", "")) if found else None


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
