"""Adding, changing and deleting runtime schedules from the admin.

Django's add, change and delete permissions on recurring tasks apply to
runtime rows only: a declared row belongs to its code and stays read-only
(pausing it is the switch's own permission). Each save or deletion writes
Django's ``LogEntry`` (the row's History, "Recent actions") and a
``QueueAction`` row (the "Queue actions" page).
"""

from __future__ import annotations

import logging

from django.http import HttpRequest

from ... import conf
from ...models import QueueAction, RecurringTask

logger = logging.getLogger(__name__)

# The page of a row the user may not edit (every declared row).
READ_FIELDS = (
    "key",
    "status",
    "switch_control",
    "next_run_at",
    "last_runs",
    "schedule_label",
    "task_path",
    "backend_alias",
    "masked_arguments",
    "queue_name",
    "priority",
    "description",
    "static",
    "created_at",
    "updated_at",
)
ADD_FIELDS = (
    "key",
    "task_path",
    "schedule",
    "interval",
    "time_zone",
    "args",
    "kwargs",
    "queue_name",
    "priority",
    "description",
)
CHANGE_READONLY = (
    "key",
    "status",
    "switch_control",
    "next_run_at",
    "last_runs",
    "masked_arguments",
    "created_at",
    "updated_at",
)
CHANGE_FIELDS = (
    *CHANGE_READONLY[:5],
    "task_path",
    "schedule",
    "interval",
    "time_zone",
    "masked_arguments",
    "args",
    "kwargs",
    "queue_name",
    "priority",
    "description",
    "created_at",
    "updated_at",
)
# What each admin verb is called in a message and on the Queue actions page.
DONE = {"add": "added", "change": "changed", "delete": "deleted"}


def is_editable(obj: RecurringTask | None) -> bool:
    """Whether ``obj`` is (or a new row would be) a runtime schedule."""
    return obj is None or not obj.static


def record(request: HttpRequest, obj: RecurringTask, verb: str) -> None:
    """The ``QueueAction`` row of an add, change or delete by ``request.user``."""
    message = f"Schedule {obj.key} {DONE[verb]} ({obj.task_path}, {obj.slots})."
    logger.info("Admin action by user %s: %s", request.user.pk, message)
    QueueAction.objects.using(conf.queue_database()).record(
        user_id=request.user.pk,
        username=request.user.get_username(),
        verb=f"{verb} schedule",
        message=message,
    )
