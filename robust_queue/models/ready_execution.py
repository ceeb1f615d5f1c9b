"""A job waiting for a worker: the table workers claim from."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import connections, models, transaction
from django.db.models import Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from . import postgresql
from .claimed_execution import ClaimedExecution
from .expressions import JsonArrayAppend
from .execution import Execution, delete_by_pk, job_field, lock_with_jobs
from .job import Job

NOTIFY_CHANNEL = "robust_queue_ready"


class ReadyExecutionQuerySet(models.QuerySet["ReadyExecution"]):
    def create_all(self, jobs: Sequence[Job]) -> list[ReadyExecution]:
        """Make ``jobs`` ready; the caller holds the transaction."""
        rows = self.bulk_create(
            [
                ReadyExecution(job=job, queue_name=job.queue_name, priority=job.priority)
                for job in jobs
            ]
        )
        _notify(self.db, {job.queue_name for job in jobs})
        return rows

    def claim(
        self,
        limit: int,
        *,
        process_id: int | None,
        worker_id: str,
        queue_name: str | None = None,
        exclude_queues: Iterable[str] = (),
    ) -> list[ClaimedExecution]:
        """Claim up to ``limit`` jobs, highest priority first.

        ``queue_name`` None claims from every queue but ``exclude_queues``.
        Rows locked by another claimer are skipped, never waited for.
        """
        if limit <= 0:
            return []
        if postgresql.is_postgresql(self.db):
            return self._claim_in_one_statement(
                limit, process_id, worker_id, queue_name, list(exclude_queues)
            )
        with transaction.atomic(using=self.db):
            ready = lock_with_jobs(self._candidates(queue_name, exclude_queues), limit)
            if not ready:
                return []
            return self._claim_locked(ready, process_id, worker_id)

    def _candidates(
        self, queue_name: str | None, exclude_queues: Iterable[str]
    ) -> ReadyExecutionQuerySet:
        rows = self
        if queue_name is not None:
            rows = rows.filter(queue_name=queue_name)
        excluded = list(exclude_queues)
        if excluded:
            rows = rows.exclude(queue_name__in=excluded)
        return rows.order_by("-priority", "job_id")

    def _claim_locked(
        self, ready: list[ReadyExecution], process_id: int | None, worker_id: str
    ) -> list[ClaimedExecution]:
        now = timezone.now()
        jobs = [row.job for row in ready]
        for job in jobs:
            job.started_at = job.started_at or now
            job.last_attempted_at = now
            job.worker_ids = [*job.worker_ids, worker_id]
        claimed = ClaimedExecution.objects.using(self.db).bulk_create(
            [ClaimedExecution(job=job, process_id=process_id) for job in jobs]
        )
        delete_by_pk(self, [row.pk for row in ready])
        # One UPDATE for the batch: attempts == len(worker_ids).
        Job.objects.using(self.db).filter(pk__in=[job.pk for job in jobs]).update(
            started_at=Coalesce("started_at", Value(now)),
            last_attempted_at=now,
            worker_ids=JsonArrayAppend("worker_ids", worker_id),
        )
        return claimed

    def _claim_in_one_statement(
        self,
        limit: int,
        process_id: int | None,
        worker_id: str,
        queue_name: str | None,
        excluded: list[str],
    ) -> list[ClaimedExecution]:
        where, params = postgresql.queue_filter(queue_name, excluded)
        sql = postgresql.CLAIM.format(
            ready=postgresql.table(self.db, ReadyExecution),
            claimed=postgresql.table(self.db, ClaimedExecution),
            job=postgresql.table(self.db, Job),
            where=where,
        )
        now = timezone.now()
        params += [limit, process_id, now, now, now, worker_id]
        # RETURNING has no order: put the batch back in claim order.
        jobs = sorted(
            Job.objects.using(self.db).raw(sql, params),
            key=lambda job: (-job.priority, job.pk),
        )
        fields = ["id", "job_id", "process_id", "created_at"]
        claimed = []
        for job in jobs:
            row = ClaimedExecution.from_db(
                self.db, fields, [vars(job).pop("claim_id"), job.pk, process_id, now]
            )
            row.job = job
            claimed.append(row)
        return claimed

    def queue_names(self) -> list[str]:
        return sorted(set(self.values_list("queue_name", flat=True).distinct()))


class ReadyExecution(Execution):
    job = job_field("ready_execution")
    queue_name = models.CharField(max_length=64)
    priority = models.SmallIntegerField(default=0)

    objects = ReadyExecutionQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_ready_execution"
        indexes = [
            models.Index(fields=["-priority", "job"], name="rq_ready_poll_all"),
            models.Index(
                fields=["queue_name", "-priority", "job"], name="rq_ready_poll_queue"
            ),
        ]


def _notify(using: str, queue_names: set[str]) -> None:
    """Wake idle PostgreSQL listeners when the transaction commits."""
    connection = connections[using]
    if connection.vendor != "postgresql" or not queue_names:
        return
    with connection.cursor() as cursor:
        for name in sorted(queue_names):
            cursor.execute("SELECT pg_notify(%s, %s)", [NOTIFY_CHANNEL, name])
