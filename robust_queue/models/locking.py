"""Row locks taken in one order, and deletes that touch only those rows.

Every multi-row transition locks execution rows before job rows (the order
of a claim and a finish), each table in ascending primary key order, and
through the primary key only. On InnoDB a ``SKIP LOCKED`` read through a
secondary index keeps its lock on the index entry of a row it skipped; a
second transaction that then deletes that row waits on it while holding
what the first one needs next: a deadlock. Reading the ids first and
locking them by primary key takes no such entry.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.db.models import Model, QuerySet

from .sql import dialect_for

E = TypeVar("E", bound=Model)


def lock_by_pk(
    rows: QuerySet[Any], *fields: str, limit: int | None = None
) -> list[tuple[Any, ...]]:
    """Lock the first ``limit`` rows of ``rows`` that no one else holds.

    Returns ``(pk, *fields)`` of the locked rows, ascending. The caller
    holds the transaction; ``rows`` must select by values that do not
    change (a job id, a creation time), as they are not read again.
    """
    ids = rows.order_by("pk").values_list("pk", flat=True)
    pks = list(ids[:limit] if limit is not None else ids)
    if not pks:
        return []
    manager = rows.model._default_manager.using(rows.db)
    locked = manager.filter(pk__in=pks).order_by("pk").select_for_update(skip_locked=True)
    return list(locked.values_list("pk", *fields))


def delete_by_pk(rows: QuerySet[Any], pks: list[Any]) -> None:
    """Delete rows of ``rows.model`` this transaction has locked, by primary key.

    Plain SQL: Django's delete collector would also run ``DELETE ...
    WHERE job_id IN (...)`` on every table that refers to a job, and on
    MySQL/MariaDB a multi-row DELETE may scan the table when statistics are
    stale and wait on rows other claimers locked: a deadlock. There each
    primary key gets its own statement (the dialect's ``delete_ids``).
    Rows that refer to a deleted row must be gone first: the database's
    foreign keys refuse the delete otherwise.
    """
    model: type[Model] = rows.model
    dialect_for(rows.db).delete_ids(model._meta.db_table, pks)


def lock_with_jobs(rows: QuerySet[E], limit: int | None = None) -> list[E]:
    """Lock the rows of an ordered queryset, skipping locked ones.

    Only execution rows are locked, never their jobs. MariaDB cannot lock
    one table of a join (locking both deadlocks concurrent claimers), so
    there the jobs are read in a second query.
    """
    dialect = dialect_for(rows.db)
    joined = dialect.locks_joined_rows
    if joined:
        rows = rows.select_related("job")
    locked = rows.select_for_update(skip_locked=True, of=dialect.lock_of)
    found = list(locked[:limit] if limit is not None else locked)
    if not joined and found:
        linked: list[Any] = found  # execution rows: each has a job link
        jobs = _job_manager(rows).in_bulk([row.job_id for row in linked])
        for row in linked:
            row.job = jobs[row.job_id]
    return found


def _job_manager(rows: QuerySet[Any]) -> Any:
    # The job model through the rows' own link: this module sits below it.
    return rows.model._meta.get_field("job").related_model._default_manager.using(rows.db)
