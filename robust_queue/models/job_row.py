"""A job row as the modules below ``job.py`` see it.

``job.py`` calls on the job's collaborators: its tags, batch, parents and
rate limit, its cancel and reschedule transitions, its statistics. They
read a job through ``JobRow`` and reach its table through the row
(``job_manager``), never importing ``Job``: the models import each other
without a circle, type hints included.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from .job_state import JobState

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


def job_manager(job: JobRow, using: str | None) -> Any:
    """The job table's manager (``JobQuerySet``) on ``using``."""
    return job._meta.model._default_manager.using(using)
