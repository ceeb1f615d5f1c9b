"""What every execution table shares: a unique job and a creation time."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from django.db import models, transaction
from django.utils import timezone

from .job import Job
from .locking import delete_by_pk, lock_with_jobs
from .statistics import record_jobs

__all__ = ["Execution", "delete_by_pk", "dispatch_now", "job_field", "lock_with_jobs"]

if TYPE_CHECKING:
    from django.db.models import QuerySet

E = TypeVar("E", bound="Execution")


def job_field(related_name: str) -> models.OneToOneField[Job, Job]:
    """The unique link from an execution row to its job."""
    return models.OneToOneField(
        "robust_queue.Job", on_delete=models.CASCADE, related_name=related_name
    )


def dispatch_now(rows: QuerySet[E], *, count_as: str | None = None) -> int:
    """Take the jobs of ``rows`` out of their state and make them ready now.

    Locks the rows (skipping any another transaction holds), deletes them
    and dispatches their jobs, in one transaction; returns how many moved.
    ``count_as`` names the statistics column that counts them (``retried``).
    """
    with transaction.atomic(using=rows.db):
        # Locked by primary key, ascending (see locking.py).
        pks = sorted(rows.values_list("pk", flat=True))
        by_pk = rows.model._default_manager.using(rows.db).filter(pk__in=pks)
        locked = sorted(lock_with_jobs(by_pk.order_by("pk")), key=lambda row: row.job_id)
        delete_by_pk(rows, [row.pk for row in locked])
        Job.objects.using(rows.db).dispatch_all([row.job for row in locked], immediately=True)
    if count_as is not None:
        pairs = [(row.job.queue_name, row.job.task_path) for row in locked]
        record_jobs(pairs, using=rows.db or "default", column=count_as)
    return len(locked)


class Execution(models.Model):
    """One live state of one job; the row's presence is the state."""

    created_at = models.DateTimeField(default=timezone.now)

    job: Job
    job_id: int

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{type(self).__name__} of job {self.job_id}"
