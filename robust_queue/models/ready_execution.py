"""A job waiting for a worker: the table workers claim from."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from django.db import connections, models
from django.utils import timezone

from .claimed_execution import ClaimedExecution
from .execution import Execution, delete_by_pk, job_field
from .job import Job
from .short_transaction import short_transaction
from .sql import NOTIFY_CHANNEL, Statement, Statements, queue_filter


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
        statements = Statements(connections[self.db])
        queue = queue_filter(queue_name, list(exclude_queues))
        now = timezone.now()
        if statements.is_postgresql:
            jobs = self._claim_in_one_statement(statements, limit, queue, process_id, worker_id, now)
        else:
            with short_transaction(self.db):
                jobs = self._claim_in_steps(statements, limit, queue, process_id, worker_id, now)
        fields = ["id", "job_id", "process_id", "created_at"]
        claimed = []
        for claim_id, job in jobs:
            row = ClaimedExecution.from_db(self.db, fields, [claim_id, job.pk, process_id, now])
            row.job = job
            claimed.append(row)
        return claimed

    def _claim_in_one_statement(
        self,
        statements: Statements,
        limit: int,
        queue: Statement,
        process_id: int | None,
        worker_id: str,
        now: datetime,
    ) -> list[tuple[int, Job]]:
        sql, params = statements.claim_in_one(limit, queue, process_id, worker_id, now)
        # RETURNING has no order: put the batch back in claim order.
        jobs = sorted(
            Job.objects.using(self.db).raw(sql, params), key=lambda job: (-job.priority, job.pk)
        )
        return [(vars(job).pop("claim_id"), job) for job in jobs]

    def _claim_in_steps(
        self,
        statements: Statements,
        limit: int,
        queue: Statement,
        process_id: int | None,
        worker_id: str,
        now: datetime,
    ) -> list[tuple[int, Job]]:
        """Lock ready rows, insert their claims, delete them by primary key
        and stamp their jobs; the caller holds the transaction."""
        with statements.connection.cursor() as cursor:
            cursor.execute(*statements.lock_ready(limit, queue))
            locked = cursor.fetchall()
            if not locked:
                return []
            job_ids = [job_id for _, job_id in locked]
            sql, params, returning = statements.insert_claims(job_ids, process_id, now)
            cursor.execute(sql, params)
            if not returning:
                cursor.execute(*statements.claim_ids(job_ids))
            claim_ids = dict(cursor.fetchall())
            delete_by_pk(self, [ready_id for ready_id, _ in locked])
            cursor.execute(*statements.stamp_jobs(job_ids, worker_id, now))
        selected = Job.objects.using(self.db).raw(*statements.select_jobs(job_ids))
        jobs = {job.pk: job for job in selected}
        return [(claim_ids[job_id], jobs[job_id]) for job_id in job_ids]

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
