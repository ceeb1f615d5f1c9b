"""A unique key and the job that holds it (``@unique``, ``enqueue_once``).

One row per key hash, unique: the row is written or taken over in the
enqueue's transaction and stays locked until it ends, so of any number of
concurrent enqueues of one key exactly one writes a job. A row is not
deleted when its job moves on; whether the job still counts is decided,
under that lock, by the next enqueue of the key. Rows whose job is gone
are cleared by maintenance.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from functools import partial

from django.db import models, transaction
from django.utils import timezone

from ..options.unique_claims import UniqueClaim
from .batching import each_batch
from .clock import database_now
from .job import Job
from .job_state import JobState
from .sql import dialect_for

DEFAULT_BATCH_SIZE = 500


class UniqueKeyQuerySet(models.QuerySet["UniqueKey"]):
    def enqueue_all(
        self, jobs: list[Job], claims: Sequence[UniqueClaim | None]
    ) -> list[Job | None]:
        """Enqueue ``jobs``, each under its claim's key (None: no key).

        Returns, for each job, the job that stands for it: itself; the job
        holding its key if that one still counts (nothing is written for
        the duplicate; a later job of the same key in ``jobs`` stands for
        the first); or None if a concurrency limit discarded it.
        """
        # The first job of each key claims it; later ones stand with it.
        first: dict[str, tuple[UniqueClaim, Job]] = {}
        for job, claim in zip(jobs, claims, strict=True):
            if claim is not None:
                first.setdefault(claim.key_hash, (claim, job))
        # One transaction: the keys and the jobs are written together, or
        # not at all (within the caller's transaction, with it).
        with transaction.atomic(using=self.db, savepoint=False):
            holders = self._claim_all(list(first.values()))
            standing: list[Job] = []
            for job, claim in zip(jobs, claims, strict=True):
                key = claim.key_hash if claim is not None else None
                standing.append(job if key is None else holders.get(key, first[key][1]))
            written = [job for job, stood in zip(jobs, standing, strict=True) if job is stood]
            kept = Job.objects.using(self.db).enqueue_all(written)
        if len(kept) < len(written):
            gone = {id(job) for job in written} - {id(job) for job in kept}
            return [None if id(job) in gone else job for job in standing]
        return list(standing)

    def _claim_all(self, claims: list[tuple[UniqueClaim, Job]]) -> dict[str, Job]:
        """Take each key for its job unless the job holding it still counts.

        Returns the holders that still count, by key hash. The rows are
        locked in key order (no deadlock between bulk enqueues) and stay
        locked until the transaction ends.
        """
        if not claims:
            return {}
        claims = sorted(claims, key=lambda pair: pair[0].key_hash)
        self._lock_or_create(claims)
        # Not a locking read: this transaction holds the rows already, and
        # under READ COMMITTED a plain read sees their latest version. (On
        # InnoDB a locking read may scan the table and wait on the rows
        # another enqueue is inserting, while that one waits on ours.)
        rows = self.filter(key_hash__in=[claim.key_hash for claim, _ in claims])
        stored = {
            key: (pk, result_id)
            for key, pk, result_id in rows.values_list("key_hash", "pk", "result_id")
        }
        taken = [
            (c, job, *stored[c.key_hash])
            for c, job in claims
            if stored[c.key_hash][1] != job.result_id
        ]
        if not taken:
            return {}
        holders = self._holders([result_id for *_, result_id in taken])
        clock = _Clock(self.db)
        counting = {}
        for claim, job, pk, result_id in taken:
            holder = holders.get(result_id)
            if holder is not None and _counts(claim, holder, clock):
                counting[claim.key_hash] = holder
            else:
                # By primary key: the only row this touches is ours.
                self.filter(pk=pk).update(
                    result_id=job.result_id, key=claim.label, updated_at=timezone.now()
                )
        return counting

    def _lock_or_create(self, claims: list[tuple[UniqueClaim, Job]]) -> None:
        # An upsert locks each row exclusively whether it inserts it or
        # not; a new row names its job already. (A plain INSERT that hits
        # the unique key takes a shared lock on MySQL/MariaDB, and two such
        # transactions deadlock upgrading it.)
        now = timezone.now()
        self.bulk_create(
            [
                UniqueKey(
                    key_hash=claim.key_hash,
                    key=claim.label,
                    result_id=job.result_id,
                    created_at=now,
                    updated_at=now,
                )
                for claim, job in claims
            ],
            update_conflicts=True,
            update_fields=["updated_at"],
            unique_fields=dialect_for(self.db).upsert_target(["key_hash"]),
        )

    def _holders(self, result_ids: list[str]) -> dict[str, Job]:
        jobs = Job.objects.using(self.db).with_executions().filter(result_id__in=result_ids)
        return {job.result_id: job for job in jobs}

    def orphaned(self) -> UniqueKeyQuerySet:
        """Keys whose job no longer exists (cleared, discarded, deleted)."""
        jobs = Job.objects.using(self.db).filter(result_id=models.OuterRef("result_id"))
        return self.filter(~models.Exists(jobs))

    def clear_orphaned_in_batches(self, batch_size: int = DEFAULT_BATCH_SIZE) -> int:
        """Delete the keys of jobs that are gone, a batch per transaction.

        A key being taken over meanwhile is locked and skipped.
        """
        return sum(self.clear_orphaned_in_steps(batch_size))

    def clear_orphaned_in_steps(self, batch_size: int = DEFAULT_BATCH_SIZE) -> Iterator[int]:
        """``clear_orphaned_in_batches`` a batch (one transaction) per step."""
        return each_batch(partial(self._clear_orphaned_batch, batch_size), batch_size)

    def _clear_orphaned_batch(self, batch_size: int) -> int:
        with transaction.atomic(using=self.db):
            rows = self.orphaned().order_by("pk").select_for_update(skip_locked=True)
            pks = list(rows.values_list("pk", flat=True)[:batch_size])
            # Only rows that still name a job that is gone: one taken over
            # before the lock was read names a live job.
            self.filter(pk__in=pks).orphaned().delete()
        return len(pks)


class _Clock:
    """The database's time, read once and only if an ended job needs it."""

    def __init__(self, using: str) -> None:
        self.using = using
        self._now: datetime | None = None

    def now(self) -> datetime:
        if self._now is None:
            self._now = database_now(self.using)
        return self._now


def _counts(claim: UniqueClaim, holder: Job, clock: _Clock) -> bool:
    try:
        state = holder.state
    except LookupError:
        # No execution row and not finished: a job in between states is
        # alive; it keeps its key.
        return True
    ended_at = holder.finished_at
    if state == JobState.FAILED:
        ended_at = holder.failed_execution.created_at
    ended = state in (JobState.FINISHED, JobState.FAILED)
    needs_clock = ended and claim.uniqueness.within is not None
    return claim.uniqueness.counts(state.value, ended_at, clock.now() if needs_clock else None)


class UniqueKey(models.Model):
    key_hash = models.CharField(max_length=64, unique=True)
    key = models.CharField(max_length=255)
    result_id = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = UniqueKeyQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_unique_key"
        # The admin shows a job's key and finds a key's job (0011).
        indexes = [models.Index(fields=["result_id"], name="rq_unique_key_result")]

    def __str__(self) -> str:
        return f"unique key {self.key} -> {self.result_id}"
