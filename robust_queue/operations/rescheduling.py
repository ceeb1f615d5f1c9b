"""Rescheduling: move a scheduled or failed job to a new time.

``reschedule(result_id, at)``, ``Job.reschedule(at)`` and the admin's
"Reschedule" action. ``at`` is an aware datetime, or a ``timedelta`` from
now by the database's clock. A scheduled job moves to ``at``; a failed one
runs again at ``at`` (a retry by hand: its errors are kept). A time that
has passed makes the job ready now (blocked, if its concurrency limit is
full). The move is one transaction that locks the job's execution row: a
dispatcher or retry that holds it wins, and the move is tried again.
"""

from __future__ import annotations

from datetime import datetime

from asgiref.sync import sync_to_async

from .. import conf
from ..compat import DEFAULT_TASK_BACKEND_ALIAS, TaskResultDoesNotExist
from ..models.job import RESULT_ID_MAX_LENGTH, Job
from ..models.rescheduling import When, checked_time, reschedule_job

__all__ = ["areschedule", "checked_time", "reschedule", "reschedule_job"]


def reschedule(result_id: str, at: When, *, backend: str = DEFAULT_TASK_BACKEND_ALIAS) -> datetime:
    """Move the scheduled or failed job of ``result_id`` to ``at``; returns
    its new due time.

    Raises ``TypeError``/``ValueError`` for a bad ``at`` (a naive datetime),
    ``TaskResultDoesNotExist`` for an unknown id and
    ``NotReschedulableError`` for a job that is not scheduled or failed.
    """
    checked_time(at)
    if not isinstance(result_id, str) or not 0 < len(result_id) <= RESULT_ID_MAX_LENGTH:
        raise TaskResultDoesNotExist(f"No job has the result id {result_id!r}.")
    job = Job.objects.using(conf.database_for(backend)).filter(result_id=result_id).first()
    if job is None:
        raise TaskResultDoesNotExist(f"No job has the result id {result_id!r}.")
    return reschedule_job(job, at)


async def areschedule(
    result_id: str, at: When, *, backend: str = DEFAULT_TASK_BACKEND_ALIAS
) -> datetime:
    """The async twin of ``reschedule``."""
    return await sync_to_async(reschedule)(result_id, at, backend=backend)
