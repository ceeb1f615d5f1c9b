"""The job row: one per enqueued task, whatever state it is in."""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from django.db import models, transaction
from django.utils import timezone

from .. import signals
from ..exceptions import UndiscardableError, UnknownTaskError
from ..options import concurrency, fair_groups, registry, retries
from .attempt_history import stored_worker_ids
from .batch import BatchMember
from .batching import id_batches
from .cancelling import CancelOutcome, cancel_job
from .clock import database_now
from .job_dependency import JobDependency
from .job_state import EXECUTION_ACCESSORS, JobState, execution_manager
from .job_tag import JobTag
from .locking import delete_by_pk, lock_by_pk
from .opaque import opaque_id
from .rate_limit import RateLimit
from .rescheduling import reschedule_job
from .sql import dialect_for
from .sql.deadlocks import retry_on_lock_conflict
from .statistics import record_jobs

if TYPE_CHECKING:
    from ..compat import Task
    from ..options.concurrency import ConcurrencyLimit

RESULT_ID_BYTES = 32
RESULT_ID_MAX_LENGTH = 64
DEFAULT_BATCH_SIZE = 500


def new_result_id() -> str:
    """An opaque, unguessable result id (43 url-safe characters)."""
    return opaque_id(RESULT_ID_BYTES)


class JobQuerySet(models.QuerySet["Job"]):
    def with_executions(self) -> JobQuerySet:
        """Join every execution table so ``state`` costs no more queries."""
        return self.select_related(*EXECUTION_ACCESSORS.values())

    def finished(self) -> JobQuerySet:
        return self.filter(finished_at__isnull=False)

    def failed(self) -> JobQuerySet:
        return self.filter(failed_execution__isnull=False)

    def record_progress(self, job_id: int, claim_id: int, value: dict[str, Any]) -> bool:
        """Store a running job's ``progress``; False (nothing written) once
        its claim ``claim_id`` is gone: the job ended, was pruned or runs
        again under another claim.

        One UPDATE of the job row, fenced by a subquery on the claim table
        (never a join: MySQL would read the ids first, then update).
        """
        return self._update_while_claimed(job_id, claim_id, progress=value)

    def record_steps(self, job_id: int, claim_id: int, value: dict[str, Any]) -> bool:
        """Store a running job's ``steps`` (running/steps.py); fenced by its
        claim as ``record_progress`` is."""
        return self._update_while_claimed(job_id, claim_id, steps=value)

    def _update_while_claimed(self, job_id: int, claim_id: int, **values: Any) -> bool:
        claims = execution_manager(self.model, JobState.CLAIMED, self.db)
        fence = models.Exists(claims.filter(pk=claim_id, job_id=job_id))
        return bool(self.filter(fence, pk=job_id).update(**values))

    def enqueue_all(self, jobs: list[Job]) -> list[Job]:
        """Insert ``jobs`` and give each its first execution, atomically.

        One INSERT for the jobs and one per execution table, whatever the
        number of jobs; where the database can (PostgreSQL), jobs that all
        go straight to ready are one statement (jobs, ready rows and NOTIFY
        together). A ``run_after`` is compared with the database's clock,
        read once and only when a job has one.

        A job with ``pending_parents`` waits for them (job_dependency.py);
        they are checked before anything is written (``DependencyError``).

        Returns the jobs that were kept: all of them but those a
        concurrency limit with ``on_conflict="discard"`` dropped.
        """
        if not jobs:
            return []
        now = self._clock_for(jobs)
        if _are_ready_at(jobs, now):
            ids = dialect_for(self.db).insert_ready(jobs, timezone.now())
            if ids is not None:
                return self._with_ids(jobs, ids)
        dependencies = JobDependency.objects.using(self.db)
        waiting = [job for job in jobs if job.pending_parents]
        parents = dependencies.parents_of(waiting) if waiting else {}
        # No savepoint: inside the caller's transaction a failure here dooms
        # that transaction anyway, and a savepoint costs two round trips.
        with transaction.atomic(using=self.db, savepoint=False):
            created = self.bulk_create(jobs)
            self._fill_missing_pks(created)
            due = created
            if waiting:
                free = {id(job) for job in dependencies.wait_all(waiting, parents)}
                due = [job for job in created if not job.pending_parents or id(job) in free]
            discarded = self._dispatch(due, now, bypass_concurrency=False)
            members = [job for job in created if job.pending_batch and job not in discarded]
            if members:
                BatchMember.objects.using(self.db).join_all(members)
            if any(job.pending_tags for job in created):
                kept = [job for job in created if job not in discarded]
                JobTag.objects.using(self.db).create_all(kept)
        if discarded:
            return [job for job in created if job not in discarded]
        return created

    def _with_ids(self, jobs: list[Job], ids: dict[str, int]) -> list[Job]:
        # Jobs the dialect inserted: {result id: job id}.
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
        bypass_rate: bool = False,
        now: datetime | None = None,
    ) -> None:
        """Move ``jobs`` to scheduled (future ``run_after``), ready, or
        blocked (over their rate or concurrency limit).

        The caller holds the transaction and has removed any previous
        execution row of these jobs. ``bypass_concurrency`` is for jobs
        that already hold their slot (a released claim), and that were
        counted by their rate limit too; ``bypass_rate`` for jobs a rate
        limit has just admitted. ``now`` is the database's clock if the
        caller has just read it.
        """
        if now is None and not immediately:
            now = self._clock_for(jobs)
        self._dispatch(jobs, now, bypass_concurrency=bypass_concurrency, bypass_rate=bypass_rate)

    def _dispatch(
        self,
        jobs: list[Job],
        now: datetime | None,
        *,
        bypass_concurrency: bool,
        bypass_rate: bool = False,
    ) -> list[Job]:
        """Give each job its next execution; return the jobs a concurrency
        limit discarded (deleted) instead."""
        # ``now`` is the database's clock; None: every run_after counts as due.
        later, rated, due, limited = [], [], [], []
        for job in jobs:
            if now is not None and job.run_after is not None and job.run_after > now:
                later.append(job)
            elif job.rate_key and not (bypass_rate or bypass_concurrency):
                rated.append(job)
            elif job.concurrency_key and not bypass_concurrency:
                limited.append(job)
            else:
                due.append(job)
        if rated:
            self._admit(rated, now, due, limited)
        if later:
            self._execution_manager(JobState.SCHEDULED).create_all(later)
        discarded: list[Job] = []
        if limited:
            blocked = self._execution_manager(JobState.BLOCKED)
            acquired, discarded = blocked.acquire_or_block(limited)
            due += acquired
        if due:
            self._execution_manager(JobState.READY).create_all(due)
        return discarded

    def _admit(
        self, rated: list[Job], now: datetime | None, due: list[Job], limited: list[Job]
    ) -> None:
        """Count ``rated`` against their rate limits as they are dispatched
        (rate_limit.py); add those admitted to ``due`` or ``limited``."""
        clock = now or database_now(self.db)
        for job in RateLimit.objects.using(self.db).admit_all(rated, clock):
            (limited if job.concurrency_key else due).append(job)

    def _clock_for(self, jobs: list[Job]) -> datetime | None:
        # A run_after is compared with the database's clock, the one the
        # dispatcher uses; jobs without one need no clock (no round trip).
        if any(job.run_after is not None for job in jobs):
            return database_now(self.db)
        return None

    def discard_all_in_batches(self, batch_size: int = DEFAULT_BATCH_SIZE) -> int:
        """Delete the jobs of this queryset that are not running.

        One transaction per batch, run again after a deadlock; a job being
        claimed, dispatched or retried meanwhile is skipped. Ready jobs
        give back their slot.
        """
        discarded = 0
        for pks in id_batches(self, batch_size):
            count, holders, unfinished, gone = retry_on_lock_conflict(
                partial(self._discard_batch, pks), using=self.db, what="Discard"
            )
            record_jobs(unfinished, using=self.db or "default", column="discarded")
            discarded += count
            for job in holders:
                self._execution_manager(JobState.BLOCKED).release_slot_of(job)
            for result_id, task_path, queue_name in gone:
                signals.job_discarded.send(
                    sender=Job,
                    result_id=result_id,
                    task_path=task_path,
                    queue_name=queue_name,
                    using=self.db,
                )
        return discarded

    def _discard_batch(
        self, pks: list[int]
    ) -> tuple[int, list[Job], list[tuple[str, str]], list[tuple[str, str, str]]]:
        # Execution rows before job rows, each by ascending primary key
        # (locking.py): the order in which claims and finishes lock.
        jobs = self.model.objects.using(self.db)
        with transaction.atomic(using=self.db):
            ids: list[int] = []
            ready: list[int] = []
            for state in (JobState.READY, JobState.SCHEDULED, JobState.BLOCKED, JobState.FAILED):
                manager = self._execution_manager(state)
                locked = lock_by_pk(manager.filter(job_id__in=pks), "job_id")
                delete_by_pk(manager, [pk for pk, _ in locked])
                ids += [job_id for _, job_id in locked]
                ready += [job_id for _, job_id in locked if state == JobState.READY]
            # Their dependents and batches will not see them succeed
            # (job_dependency.py, batch.py).
            JobDependency.objects.using(self.db).mark_parents_failed(ids)
            BatchMember.objects.using(self.db).mark_failed(ids)
            # (queue, task) of the unfinished ones: statistics count them.
            unfinished = list(jobs.filter(pk__in=ids).values_list("queue_name", "task_path"))
            # Finished jobs have no execution row and never move again.
            ids += jobs.filter(pk__in=pks, finished_at__isnull=False).values_list("pk", flat=True)
            holders = list(jobs.filter(pk__in=ready).exclude(concurrency_key=""))
            # Only read what receivers will be told of when there are any.
            gone = (
                list(jobs.filter(pk__in=ids).values_list("result_id", "task_path", "queue_name"))
                if signals.job_discarded.has_listeners(Job)
                else []
            )
            delete_by_pk(jobs, sorted(ids))
        return len(ids), holders, unfinished, gone

    def _execution_manager(self, state: JobState) -> Any:
        return execution_manager(self.model, state, self.db)

    def _fill_missing_pks(self, jobs: list[Job]) -> None:
        # MySQL (unlike MariaDB, PostgreSQL, SQLite) returns no ids from a
        # bulk insert; the result ids are unique, so look them up.
        missing = {job.result_id: job for job in jobs if job.pk is None}
        if not missing:
            return
        rows = self.filter(result_id__in=list(missing)).values_list("result_id", "pk")
        for result_id, pk in rows:
            missing[result_id].pk = pk


def _are_ready_at(jobs: list[Job], now: datetime | None) -> bool:
    """Whether every job goes straight to ready at ``now`` (due, no
    concurrency key, no tags, no fair group); ``now`` is None when no job has a
    ``run_after``."""
    return all(
        not job.concurrency_key
        and not job.rate_key
        and not job.pending_tags
        and not job.pending_parents
        and job.pending_batch is None
        and job.group_key is None
        and (job.run_after is None or (now is not None and job.run_after <= now))
        for job in jobs
    )


class Job(models.Model):
    """A task to run: what, where, with which arguments, and what happened."""

    result_id = models.CharField(
        max_length=RESULT_ID_MAX_LENGTH, unique=True, default=new_result_id
    )
    task_path = models.CharField(max_length=255)
    queue_name = models.CharField(max_length=64)
    priority = models.SmallIntegerField(default=0)
    backend_alias = models.CharField(max_length=64)
    arguments = models.JSONField(default=dict)
    concurrency_key = models.CharField(max_length=255, blank=True, default="")
    # The job's rate limit key (rate_limits.py); "" for none.
    rate_key = models.CharField(max_length=255, blank=True, default="")
    run_after = models.DateTimeField(null=True, blank=True)
    enqueued_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    last_attempted_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    worker_ids = models.JSONField(default=list)
    errors = models.JSONField(default=list)
    return_value = models.JSONField(null=True, blank=True)
    # Set at enqueue (robust_queue.job_metadata, @on_enqueue), read by the
    # task with robust_queue.metadata(context): trace ids and the like.
    metadata = models.JSONField(default=dict, blank=True)
    # Runs that ended in robust_queue.Snooze: they count as attempts
    # (worker_ids) but not for the retry policy (retry_attempt).
    snoozes = models.PositiveIntegerField(default=0)
    # Set by the running task (robust_queue.progress): {"done", "total",
    # "note", "at"}; kept once the job ends (running/progress.py).
    progress = models.JSONField(null=True, blank=True)
    # What the task logged during each attempt, when its job log is on
    # (robust_queue.job_log): [{"attempt", "worker_id", "text"}, ...], the
    # last attempts' only (models/attempt_logs.py). Nullable: no rewrite.
    attempt_logs = models.JSONField(null=True, blank=True)
    # A task written as steps (robust_queue.steps): {"done": [names],
    # "step": the unfinished one, "cursor": its last checkpoint, encoded
    # as arguments are}. Kept across retries and stops, so the next
    # attempt resumes there (running/steps.py). Nullable: no rewrite.
    steps = models.JSONField(null=True, blank=True)
    # Someone waits for the job's end (robust_queue.wait): on PostgreSQL
    # its finish then NOTIFYs them; no NOTIFY for the others. A database
    # default: workers of the previous release, still running during a
    # rolling deploy, insert jobs without this column.
    awaited = models.BooleanField(default=False, db_default=False)
    # The job's fair group (robust_queue.fair_group, fair_rounds.py); None:
    # none. Not written by the enqueue of ungrouped jobs (sql/statements.py).
    group_key = models.CharField(max_length=100, null=True, blank=True)

    # Not a column: the tags enqueue_all() writes for a new job (JobTag).
    pending_tags: tuple[str, ...] = ()
    # Not a column: the result ids of the jobs a new job waits on.
    pending_parents: tuple[str, ...] = ()
    # Not a column: the id of the batch a new job joins (BatchMember).
    pending_batch: int | None = None

    objects = JobQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_job"
        indexes = [
            models.Index(fields=["queue_name", "finished_at"], name="rq_job_queue_finished"),
            models.Index(fields=["finished_at"], name="rq_job_finished"),
            # A task's jobs, and one queue's of them, newest first (the
            # job list's ?task=&queue=): an index range, not a walk of the
            # primary key past every other job (migration 0017).
            models.Index(fields=["task_path", "queue_name", "id"], name="rq_job_task_queue"),
            # The admin's "enqueued in the last hour" (migration 0011).
            models.Index(fields=["enqueued_at"], name="rq_job_enqueued"),
        ]
        # One permission per admin action, on top of Django's view_job.
        permissions = [
            ("retry_job", "Can retry jobs"),
            ("discard_job", "Can discard jobs"),
            ("run_job_now", "Can run jobs now"),
            ("pause_queue", "Can pause and resume queues"),
            ("cancel_job", "Can cancel jobs"),
            ("reschedule_job", "Can reschedule jobs"),
            ("edit_job", "Can edit waiting jobs"),
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
    def execution(self) -> models.Model | None:
        """The execution row the job holds (an ``execution.Execution``);
        None if it has finished."""
        # Typed as a model: execution.py imports this module.
        accessor = EXECUTION_ACCESSORS.get(self.state)
        return getattr(self, accessor) if accessor else None

    def discard(self) -> bool:
        """Delete this job; False if it moved on meanwhile.

        Raises ``UndiscardableError`` if the job is running.
        """
        jobs = Job.objects.using(self._state.db or "default").filter(pk=self.pk)
        if jobs.filter(claimed_execution__isnull=False).exists():
            raise UndiscardableError(f"Job {self.result_id} is running and cannot be discarded.")
        return jobs.discard_all_in_batches() == 1

    def declared_task(self) -> Task[..., Any] | None:
        """The task this job runs, as declared (with its options); None if
        its path names no declared task (any more)."""
        try:
            return registry.resolve_task(self.task_path, self.backend_alias)
        except UnknownTaskError:
            return None

    def concurrency_limit(self) -> ConcurrencyLimit | None:
        """The concurrency limit of this job's task, if it has one: its
        own, or its fair group's cap (``fair_groups.py``)."""
        task = self.declared_task()
        if self.concurrency_key.startswith(fair_groups.CAP_PREFIX):
            return fair_groups.cap_limit(task)
        return concurrency.limit_for(task)

    def cancel(self) -> CancelOutcome:
        """Cancel this job: a waiting one ends FAILED with
        ``JobCancelledError`` now, a running one is asked to stop.

        Returns CANCELLED or REQUESTED (``cancelling.CancelOutcome``); raises
        ``NotCancellableError`` if the job has finished or failed.
        """
        return cancel_job(self)

    def reschedule(self, at: datetime | timedelta) -> datetime:
        """Move this scheduled or failed job to ``at`` (an aware datetime,
        or a timedelta from now); returns its new due time.

        Raises ``NotReschedulableError`` if it is ready, running or
        finished (``rescheduling.py``).
        """
        return reschedule_job(self, at)

    def retry_in(self, error: BaseException) -> timedelta | None:
        """How long until this job runs again after its last attempt failed
        with ``error``, by its task's retry policy; None: never."""
        return retries.retry_in(
            self.declared_task(), error, attempt=self.retry_attempt, job=self.result_id
        )

    def tag_names(self) -> list[str]:
        """This job's tags, sorted (one query)."""
        return sorted(self.tags.values_list("tag", flat=True))

    @property
    def retry_attempt(self) -> int:
        """The number of the last run as retry policies count it: every
        run but those that snoozed. A hand-edited ``worker_ids`` counts
        as what it holds (``stored_worker_ids``)."""
        return len(stored_worker_ids(self.worker_ids)) - self.snoozes

    @property
    def args(self) -> list[Any]:
        """The stored (encoded) positional arguments; [] if malformed."""
        stored = self.arguments.get("args") if isinstance(self.arguments, dict) else None
        return list(stored) if isinstance(stored, list) else []

    @property
    def kwargs(self) -> dict[str, Any]:
        """The stored (encoded) keyword arguments; {} if malformed."""
        stored = self.arguments.get("kwargs") if isinstance(self.arguments, dict) else None
        return dict(stored) if isinstance(stored, dict) else {}
