"""A job row as the modules below ``job.py`` see it.

``job.py`` calls on the job's collaborators: its tags, batch, parents and
rate limit, its cancel and reschedule transitions, its statistics. They
read a job through ``JobRow`` and reach its table through the row
(``job_manager``), never importing ``Job``: the models import each other
without a circle, type hints included.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from ..compat import TaskResultDoesNotExist
from .job_state import JobState
from .sql.deadlocks import retry_on_lock_conflict

if TYPE_CHECKING:
    from django.db.models.base import ModelState
    from django.db.models.options import Options

    from ..compat import Task


class JobRow(Protocol):
    """What they read and write of a job (``models.Job``)."""

    _meta: ClassVar[Options[Any]]
    _state: ModelState
    pk: Any
    result_id: str
    task_path: str
    queue_name: str
    priority: int
    backend_alias: str
    concurrency_key: str
    rate_key: str
    run_after: datetime | None
    enqueued_at: datetime
    last_attempted_at: datetime | None
    worker_ids: Any
    errors: Any
    pending_tags: tuple[str, ...]
    pending_parents: tuple[str, ...]
    pending_batch: int | None

    @property
    def is_finished(self) -> bool: ...

    @property
    def state(self) -> JobState: ...

    def declared_task(self) -> Task[..., Any] | None: ...

    def save(self, *args: Any, **kwargs: Any) -> None: ...


# A function given jobs of one type hands back jobs of that type.
J = TypeVar("J", bound=JobRow)


# A job that moves between reading its state and locking it is read again.
MAX_TRIES = 5
_T = TypeVar("_T")


def until_settled(once: Callable[[], _T | None], using: str, what: str, gave_up: Exception) -> _T:
    """What ``once`` (one transaction on a waiting job, retried on a lock
    conflict) returns; None means the job moved meanwhile and it is tried
    again, ``MAX_TRIES`` times, then ``gave_up`` is raised."""
    for _ in range(MAX_TRIES):
        done = retry_on_lock_conflict(once, using=using, what=what)
        if done is not None:
            return done
        time.sleep(0.05)
    raise gave_up


def state_to_refuse(
    job: JobRow, current: JobRow | None, allowed: tuple[JobState, ...]
) -> JobState | None:
    """The state of ``current`` (``job`` read again) that a transition
    allowed only in ``allowed`` refuses; None if it may try again (the
    job is between two states, or back in an allowed one). Raises
    ``TaskResultDoesNotExist`` if the job is gone."""
    if current is None:
        raise TaskResultDoesNotExist(f"Job {job.result_id} no longer exists.")
    try:
        state = current.state
    except LookupError:
        return None  # Between two states: read it again.
    return None if state in allowed else state


def job_manager(job: JobRow, using: str | None) -> Any:
    """The job table's manager (``JobQuerySet``) on ``using``."""
    return job._meta.model._default_manager.using(using)
