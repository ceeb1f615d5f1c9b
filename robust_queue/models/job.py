"""The job row: one per enqueued task, whatever state it is in."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from django.db import connections, models, transaction
from django.utils import timezone

from ..exceptions import UndiscardableError
from .sql import Statements

if TYPE_CHECKING:
    from .execution import Execution

RESULT_ID_BYTES = 32
RESULT_ID_MAX_LENGTH = 64
DEFAULT_BATCH_SIZE = 500


def new_result_id() -> str:
    """An opaque, unguessable result id (43 url-safe characters)."""
    return secrets.token_urlsafe(RESULT_ID_BYTES)


class JobState(models.TextChoices):
    READY = "ready", "Ready"
    SCHEDULED = "scheduled", "Scheduled"
    CLAIMED = "claimed", "Running"
    BLOCKED = "blocked", "Blocked"
    FAILED = "failed", "Failed"
    FINISHED = "finished", "Finished"


# The reverse one-to-one accessor of each execution table, by state.
EXECUTION_ACCESSORS = {
    JobState.READY: "ready_execution",
    JobState.SCHEDULED: "scheduled_execution",
    JobState.CLAIMED: "claimed_execution",
    JobState.BLOCKED: "blocked_execution",
    JobState.FAILED: "failed_execution",
}


class JobQuerySet(models.QuerySet["Job"]):
    def with_executions(self) -> JobQuerySet:
        """Join every execution table so ``state`` costs no more queries."""
        return self.select_related(*EXECUTION_ACCESSORS.values())

    def finished(self) -> JobQuerySet:
        return self.filter(finished_at__isnull=False)

    def failed(self) -> JobQuerySet:
        return self.filter(failed_execution__isnull=False)

    def enqueue_all(self, jobs: list[Job]) -> list[Job]:
        """Insert ``jobs`` and give each its first execution, atomically.

        One INSERT for the jobs and one per execution table, whatever the
        number of jobs; on PostgreSQL, jobs that all go straight to ready
        are one statement (jobs, ready rows and NOTIFY together).
        """
        if not jobs:
            return []
        statements = Statements(connections[self.db])
        if statements.is_postgresql and _are_ready_now(jobs):
            return self._enqueue_in_one_statement(statements, jobs)
        # No savepoint: inside the caller's transaction a failure here dooms
        # that transaction anyway, and a savepoint costs two round trips.
        with transaction.atomic(using=self.db, savepoint=False):
            created = self.bulk_create(jobs)
            self._fill_missing_pks(created)
            self.dispatch_all(created)
        return created

    def _enqueue_in_one_statement(self, statements: Statements, jobs: list[Job]) -> list[Job]:
        with statements.connection.cursor() as cursor:
            cursor.execute(*statements.enqueue_ready(jobs, timezone.now()))
            ids = dict(cursor.fetchall())
        for job in jobs:
            job.pk = ids[job.result_id]
            job._state.adding = False
            job._state.db = self.db
        return jobs

    def dispatch_all(
        self,
        jobs: list[Job],
        *,
        immediately: bool = False,
        bypass_concurrency: bool = False,
    ) -> None:
        """Move ``jobs`` to scheduled (future ``run_after``), ready, or
        blocked (over their concurrency limit).

        The caller holds the transaction and has removed any previous
        execution row of these jobs. ``bypass_concurrency`` is for jobs
        that already hold their slot (a released claim).
        """
        now = timezone.now()
        later, due, limited = [], [], []
        for job in jobs:
            is_future = job.run_after is not None and job.run_after > now
            if is_future and not immediately:
                later.append(job)
            elif job.concurrency_key and not bypass_concurrency:
                limited.append(job)
            else:
                due.append(job)
        if later:
            self._execution_manager(JobState.SCHEDULED).create_all(later)
        if limited:
            blocked = self._execution_manager(JobState.BLOCKED)
            due += blocked.acquire_or_block(limited)
        if due:
            self._execution_manager(JobState.READY).create_all(due)

    def discard_all_in_batches(self, batch_size: int = DEFAULT_BATCH_SIZE) -> int:
        """Delete the jobs of this queryset that are not running.

        One transaction per batch; a job being claimed, dispatched or
        retried meanwhile is skipped. Ready jobs give back their slot.
        """
        discarded, last_pk = 0, 0
        while True:
            batch = self.filter(pk__gt=last_pk).order_by("pk")
            pks = list(batch.values_list("pk", flat=True)[:batch_size])
            if not pks:
                return discarded
            last_pk = pks[-1]
            with transaction.atomic(using=self.db):
                ids, ready = self._lock_discardable(pks)
                jobs = self.model.objects.using(self.db)
                holders = list(jobs.filter(pk__in=ready).exclude(concurrency_key=""))
                jobs.filter(pk__in=ids).delete()
            discarded += len(ids)
            for job in holders:
                self._execution_manager(JobState.BLOCKED).release_slot_of(job)

    def _lock_discardable(self, pks: list[int]) -> tuple[set[int], set[int]]:
        # Lock the execution rows (skipping rows a worker, dispatcher or
        # retry holds); finished jobs have none and never move again.
        ids: set[int] = set()
        ready: set[int] = set()
        for state in (JobState.READY, JobState.SCHEDULED, JobState.BLOCKED, JobState.FAILED):
            rows = self._execution_manager(state).filter(job_id__in=pks)
            locked = set(rows.select_for_update(skip_locked=True).values_list("job_id", flat=True))
            ids |= locked
            if state == JobState.READY:
                ready = locked
        ids |= set(self.filter(pk__in=pks, finished_at__isnull=False).values_list("pk", flat=True))
        return ids, ready

    def _execution_manager(self, state: JobState) -> Any:
        model = self.model._meta.get_field(EXECUTION_ACCESSORS[state]).related_model
        assert isinstance(model, type) and issubclass(model, models.Model)
        return model._default_manager.using(self.db)

    def _fill_missing_pks(self, jobs: list[Job]) -> None:
        # MySQL (unlike MariaDB, PostgreSQL, SQLite) returns no ids from a
        # bulk insert; the result ids are unique, so look them up.
        missing = {job.result_id: job for job in jobs if job.pk is None}
        if not missing:
            return
        rows = self.filter(result_id__in=list(missing)).values_list("result_id", "pk")
        for result_id, pk in rows:
            missing[result_id].pk = pk


def _are_ready_now(jobs: list[Job]) -> bool:
    """Whether every job goes straight to ready (due, no concurrency key)."""
    now = timezone.now()
    return all(
        not job.concurrency_key and (job.run_after is None or job.run_after <= now)
        for job in jobs
    )


class Job(models.Model):
    """A task to run: what, where, with which arguments, and what happened."""

    result_id = models.CharField(max_length=RESULT_ID_MAX_LENGTH, unique=True, default=new_result_id)
    task_path = models.CharField(max_length=255)
    queue_name = models.CharField(max_length=64)
    priority = models.SmallIntegerField(default=0)
    backend_alias = models.CharField(max_length=64)
    arguments = models.JSONField(default=dict)
    concurrency_key = models.CharField(max_length=255, blank=True, default="")
    run_after = models.DateTimeField(null=True, blank=True)
    enqueued_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    last_attempted_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    worker_ids = models.JSONField(default=list)
    errors = models.JSONField(default=list)
    return_value = models.JSONField(null=True, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_job"
        indexes = [
            models.Index(
                fields=["queue_name", "finished_at"], name="rq_job_queue_finished"
            ),
            models.Index(fields=["finished_at"], name="rq_job_finished"),
            models.Index(fields=["task_path"], name="rq_job_task_path"),
        ]
        # One permission per admin action, on top of Django's view_job.
        permissions = [
            ("retry_job", "Can retry jobs"),
            ("discard_job", "Can discard jobs"),
            ("run_job_now", "Can run jobs now"),
            ("pause_queue", "Can pause and resume queues"),
        ]

    def __str__(self) -> str:
        return f"{self.task_path} [{self.result_id}]"

    @property
    def is_finished(self) -> bool:
        return self.finished_at is not None

    @property
    def state(self) -> JobState:
        """The job's state, read from the execution row it holds."""
        if self.finished_at is not None:
            return JobState.FINISHED
        for state, accessor in EXECUTION_ACCESSORS.items():
            if hasattr(self, accessor):
                return state
        raise LookupError(f"Job {self.pk} has no execution and is not finished.")

    @property
    def execution(self) -> Execution | None:
        accessor = EXECUTION_ACCESSORS.get(self.state)
        return getattr(self, accessor) if accessor else None

    def discard(self) -> bool:
        """Delete this job; False if it moved on meanwhile.

        Raises ``UndiscardableError`` if the job is running.
        """
        jobs = Job.objects.using(self._state.db or "default").filter(pk=self.pk)
        if jobs.filter(claimed_execution__isnull=False).exists():
            raise UndiscardableError(
                f"Job {self.result_id} is running and cannot be discarded."
            )
        return jobs.discard_all_in_batches() == 1

    @property
    def args(self) -> list[Any]:
        return list(self.arguments.get("args", []))

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.arguments.get("kwargs", {}))
