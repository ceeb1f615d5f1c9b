"""What every execution table shares: a unique job and a creation time."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from django.db import connections, models, transaction
from django.utils import timezone

from .job import Job

if TYPE_CHECKING:
    from django.db.models import QuerySet

E = TypeVar("E", bound="Execution")


def job_field(related_name: str) -> models.OneToOneField:
    """The unique link from an execution row to its job."""
    return models.OneToOneField(
        "robust_queue.Job", on_delete=models.CASCADE, related_name=related_name
    )


def lock_with_jobs(rows: QuerySet[E], limit: int | None = None) -> list[E]:
    """Lock the rows of an ordered queryset, skipping locked ones.

    Only execution rows are locked, never their jobs. MariaDB cannot lock
    one table of a join (locking both deadlocks concurrent claimers), so
    there the jobs are read in a second query.
    """
    features = connections[rows.db].features
    joined = features.has_select_for_update_of or not features.has_select_for_update
    if joined:
        rows = rows.select_related("job")
    locked = rows.select_for_update(
        skip_locked=True, of=("self",) if features.has_select_for_update_of else ()
    )
    found = list(locked[:limit] if limit is not None else locked)
    if not joined and found:
        jobs = Job.objects.using(rows.db).in_bulk([row.job_id for row in found])
        for row in found:
            row.job = jobs[row.job_id]
    return found


def delete_by_pk(rows: QuerySet[E], pks: list[int]) -> None:
    """Delete execution rows this transaction has locked, by primary key.

    Plain SQL: nothing refers to an execution row, so Django's delete
    collector has nothing to do but cost time. On MySQL/MariaDB a multi-row
    DELETE may scan the table when statistics are stale and wait on rows
    other claimers locked: a deadlock. There each primary key gets its own
    statement, which always uses the primary key.
    """
    if not pks:
        return
    connection = connections[rows.db]
    table = connection.ops.quote_name(rows.model._meta.db_table)
    with connection.cursor() as cursor:
        if connection.vendor == "mysql":
            cursor.executemany(f"DELETE FROM {table} WHERE id = %s", [(pk,) for pk in pks])
        else:
            marks = ", ".join(["%s"] * len(pks))
            cursor.execute(f"DELETE FROM {table} WHERE id IN ({marks})", pks)


def dispatch_now(rows: QuerySet[E]) -> int:
    """Take the jobs of ``rows`` out of their state and make them ready now.

    Locks the rows (skipping any another transaction holds), deletes them
    and dispatches their jobs, in one transaction; returns how many moved.
    """
    with transaction.atomic(using=rows.db):
        locked = lock_with_jobs(rows.order_by("job_id"))
        delete_by_pk(rows, [row.pk for row in locked])
        Job.objects.using(rows.db).dispatch_all(
            [row.job for row in locked], immediately=True
        )
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
