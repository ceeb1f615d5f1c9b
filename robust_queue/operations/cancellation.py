"""Cancelling jobs: ``cancel(result_id)``, ``Job.cancel()``, and
``cancel_requested(context)`` for tasks that stop by themselves.

A waiting job (ready, scheduled, blocked) is taken out of its queue and
ends FAILED with ``JobCancelledError`` at once. A running job gets a stored
request (``ClaimedExecution.cancel_requested_at``): its worker sees it
within about a second, the task may stop by itself (``cancel_requested``),
and after ``cancel_grace_period`` it is interrupted as a job past its time
limit is. It ends FAILED with ``JobCancelledError`` and is never retried,
even when its worker dies meanwhile.

The transition is the model's (``models/cancelling.py``); this module is
the public face above the models and the worker.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async

from .. import conf
from ..compat import DEFAULT_TASK_BACKEND_ALIAS, TaskContext, TaskResultDoesNotExist
from ..models import ClaimedExecution, Job
from ..models.cancelling import CancelOutcome
from ..models.job import RESULT_ID_MAX_LENGTH
from ..processes import watchdog

__all__ = ["CancelOutcome", "acancel", "cancel", "cancel_requested"]


def cancel(result_id: str, *, backend: str = DEFAULT_TASK_BACKEND_ALIAS) -> CancelOutcome:
    """Cancel the job of ``result_id`` (a ``TaskResult.id``).

    Raises ``TaskResultDoesNotExist`` for an unknown id and
    ``NotCancellableError`` for a job that has already finished or failed.
    """
    if not isinstance(result_id, str) or not 0 < len(result_id) <= RESULT_ID_MAX_LENGTH:
        raise TaskResultDoesNotExist(f"No job has the result id {result_id!r}.")
    using = conf.database_for(backend)
    job = Job.objects.using(using).filter(result_id=result_id).first()
    if job is None:
        raise TaskResultDoesNotExist(f"No job has the result id {result_id!r}.")
    return job.cancel()


async def acancel(result_id: str, *, backend: str = DEFAULT_TASK_BACKEND_ALIAS) -> CancelOutcome:
    """The async twin of ``cancel``."""
    return await sync_to_async(cancel)(result_id, backend=backend)


def cancel_requested(context: TaskContext) -> bool:
    """Whether the running job of ``context`` was asked to stop.

    Inside a worker this reads memory (the worker looks for requests about
    once a second); elsewhere it asks the database.
    """
    result = context.task_result
    seen = watchdog.cancel_seen(result.id)
    if seen is not None:
        return seen
    using = conf.database_for(result.backend)
    claims = ClaimedExecution.objects.using(using).filter(job__result_id=result.id)
    return claims.filter(cancel_requested_at__isnull=False).exists()
