"""A job waiting for a worker: the table workers claim from."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import models

from .claimed_execution import ClaimedExecution
from .claims_in_doubt import claiming
from .execution import Execution, job_field
from .fair_rounds import rounds_of
from .job import Job
from .queue_cap import QueueCap
from .sql import ClaimedRows, Dialect, Statement, dialect_for


class ReadyExecutionQuerySet(models.QuerySet["ReadyExecution"]):
    def create_all(self, jobs: Sequence[Job]) -> list[ReadyExecution]:
        """Make ``jobs`` ready; the caller holds the transaction. A job of
        a fair group gets its round (``fair_rounds.py``); the others stay
        in round 0."""
        grouped = any(job.group_key is not None for job in jobs)
        rounds = rounds_of(self, jobs) if grouped else {}
        rows = self.bulk_create(
            [
                ReadyExecution(
                    job=job,
                    queue_name=job.queue_name,
                    priority=job.priority,
                    group_key=job.group_key,
                    fair_round=rounds.get(id(job), 0),
                )
                for job in jobs
            ]
        )
        dialect_for(self.db).notify({job.queue_name for job in jobs})
        return rows

    def claim(
        self,
        limit: int,
        *,
        process_id: int | None,
        worker_id: str,
        queue_name: str | None = None,
        exclude_queues: Iterable[str] = (),
        paused_tasks: Sequence[str] | None = None,
        max_concurrency: int | None = None,
        resume: bool = False,
    ) -> list[ClaimedExecution]:
        """Claim up to ``limit`` jobs, highest priority first.

        ``queue_name`` None claims from every queue but ``exclude_queues``.
        Rows locked by another claimer are skipped, never waited for. Jobs
        of paused tasks stay ready; ``paused_tasks`` is the caller's last
        read of them (None: unknown), checked in the claim's own snapshot.
        ``max_concurrency`` caps ``queue_name``'s claimed jobs over every
        worker (``QueueCap``). ``resume``: start after this connection's
        last claim (a worker's; ``sql/claim_position.py``).
        """
        if limit <= 0:
            return []
        dialect = dialect_for(self.db)
        queue = dialect.claim_filter(queue_name, list(exclude_queues), paused_tasks)
        with claiming(self.db, process_id) as stamp:
            if max_concurrency is not None:
                assert queue_name is not None, "a cap applies to one queue"
                claimed = self._claim_capped(
                    dialect, limit, queue_name, max_concurrency, queue, process_id, worker_id, stamp
                )
            elif resume:
                claimed = dialect.claim(limit, queue, process_id, worker_id, stamp, resume=True)
            else:
                claimed = dialect.claim(limit, queue, process_id, worker_id, stamp)
            rows = ClaimedExecution.from_claimed_rows(self.db, claimed, process_id, stamp)
        return rows

    def _claim_capped(
        self,
        dialect: Dialect,
        limit: int,
        queue_name: str,
        max_concurrency: int,
        queue: Statement,
        *claim: Any,
    ) -> ClaimedRows:
        """Claim while holding the queue's lock row: at most the room left
        under ``max_concurrency``. An empty queue takes no lock."""
        if not self.filter(queue_name=queue_name).exists():
            return _NONE
        caps = QueueCap.objects.using(self.db)
        claimed = self._claim_under_lock(dialect, limit, queue_name, max_concurrency, queue, *claim)
        if claimed is None:
            # The queue's first claim: its lock row is made on its own.
            caps.ensure(queue_name)
            claimed = self._claim_under_lock(
                dialect, limit, queue_name, max_concurrency, queue, *claim
            )
        return claimed or _NONE

    def _claim_under_lock(
        self,
        dialect: Dialect,
        limit: int,
        queue_name: str,
        max_concurrency: int,
        queue: Statement,
        *claim: Any,
    ) -> ClaimedRows | None:
        """The capped claim's transaction; None if the lock row is missing."""
        caps = QueueCap.objects.using(self.db)
        with dialect.transaction():
            claims = caps.lock(queue_name)
            if claims is None:
                return None
            running = caps.running(queue_name, claims)
            room = 0 if running is None else min(limit, max_concurrency - running)
            if room <= 0:
                return _NONE
            claimed = dialect.claim_in_transaction(room, queue, *claim)
            if claimed.rows:
                caps.record_claim(queue_name)
            return claimed

    def queue_names(self) -> list[str]:
        return sorted(set(self.values_list("queue_name", flat=True).distinct()))


class ReadyExecution(Execution):
    job = job_field("ready_execution")
    queue_name = models.CharField(max_length=64)
    priority = models.SmallIntegerField(default=0)
    # The job's fair group and round (fair_rounds.py); a job without a
    # group has none and round 0. Database defaults: the enqueue's own
    # INSERTs of ungrouped jobs do not name them.
    group_key = models.CharField(max_length=100, null=True, blank=True)
    fair_round = models.BigIntegerField(default=0, db_default=0)

    objects = ReadyExecutionQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_ready_execution"
        # The claim's order (sql/statements.CLAIM_ORDER); the last index,
        # a group's last round, is made by migration 0031 (partial where
        # the database has partial indexes).
        indexes = [
            models.Index(fields=["-priority", "fair_round", "job"], name="rq_ready_poll_all"),
            models.Index(
                fields=["queue_name", "-priority", "fair_round", "job"],
                name="rq_ready_poll_queue",
            ),
        ]


# Nothing claimed.
_NONE = ClaimedRows([], [])
