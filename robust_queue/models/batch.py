"""Batches of jobs with callbacks (``robust_queue.batch``).

A batch is open while its ``with`` block (or ``add()``) runs, and sealed
after. The dispatcher's pass (``complete_all_in_batches``) locks sealed,
incomplete batches none of whose jobs is still to run (``SKIP LOCKED``, by
id, the lock being the transaction's first read), counts their jobs, marks
them complete and enqueues their callbacks, all in one transaction: two
dispatchers never fire a callback twice, and a crash before the commit
leaves the batch for the next pass.

A job counts as failed if it failed for good (a failed execution,
cancelled ones too) or was discarded or cleared unfinished (the member row
is marked in that transaction); a job that is gone otherwise had
succeeded (``preserve_finished_jobs=False``, retention).

Below ``job.py``: jobs are reached through the member rows' link.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.db import models, transaction
from django.db.models import Count, Exists, OuterRef, Q
from django.utils import timezone

from ..exceptions import BatchError, UnknownTaskError
from ..options import registry
from . import batch_scope
from .batching import each_batch
from .clock import DatabaseNow, database_now
from .opaque import opaque_id

if TYPE_CHECKING:
    from .job_row import JobRow

DEFAULT_BATCH_SIZE = 100
BATCH_ID_BYTES = 24


def new_batch_id() -> str:
    """An opaque, unguessable batch id (32 url-safe characters)."""
    return opaque_id(BATCH_ID_BYTES)


@dataclass(frozen=True, slots=True)
class Progress:
    """How far a batch has come."""

    total: int
    pending: int
    succeeded: int
    failed: int


class BatchMemberQuerySet(models.QuerySet["BatchMember"]):
    def join_all(self, jobs: Sequence[JobRow]) -> None:
        """Add ``jobs`` (saved, with ``pending_batch``) to their batches;
        the caller holds the enqueue's transaction."""
        self.bulk_create(
            [
                BatchMember(batch_id=job.pending_batch, job_id=job.pk)
                for job in jobs
                if job.pending_batch is not None
            ]
        )

    def mark_failed(self, job_ids: Sequence[int]) -> None:
        """Record that these jobs will never succeed (they are being
        discarded or cleared); the caller holds that transaction."""
        if job_ids:
            self.filter(job_id__in=job_ids, failed=False).update(failed=True)

    def progress(self) -> Progress:
        """Count these members by outcome, in one statement."""
        jobs = self._jobs()
        live = jobs.filter(pk=OuterRef("job_id"))
        counts = self.annotate(
            exists=Exists(live),
            pending=Exists(live.filter(finished_at__isnull=True, failed_execution__isnull=True)),
            failed_now=Exists(live.filter(failed_execution__isnull=False)),
        ).aggregate(
            n_total=Count("pk"),
            n_pending=Count("pk", filter=Q(pending=True)),
            n_failed=Count("pk", filter=Q(failed_now=True) | Q(failed=True, exists=False)),
        )
        total, pending, failed = counts["n_total"], counts["n_pending"], counts["n_failed"]
        return Progress(total, pending, total - pending - failed, failed)

    def _jobs(self) -> Any:
        model = self.model._meta.get_field("job").related_model
        return model._default_manager.using(self.db)  # type: ignore[union-attr]


class BatchQuerySet(models.QuerySet["Batch"]):
    def complete_all_in_batches(self, batch_size: int = DEFAULT_BATCH_SIZE) -> int:
        """Complete every sealed batch none of whose jobs is still to run,
        and enqueue its callbacks; return how many were completed."""
        completed = 0
        while True:
            count = self._complete_batch(batch_size)
            completed += count
            if count < batch_size:
                return completed

    def clear_completed_in_batches(
        self, older_than: timedelta, batch_size: int = DEFAULT_BATCH_SIZE
    ) -> int:
        """Delete batches completed more than ``older_than`` ago (by the
        database's clock) with their member rows; return how many."""
        return sum(self.clear_completed_in_steps(older_than, batch_size))

    def clear_completed_in_steps(
        self, older_than: timedelta, batch_size: int = DEFAULT_BATCH_SIZE
    ) -> Iterator[int]:
        """``clear_completed_in_batches`` a batch (one transaction) per step."""
        old = self.filter(completed_at__lt=DatabaseNow() - older_than)

        def batch() -> int:
            pks = list(old.order_by("pk").values_list("pk", flat=True)[:batch_size])
            if pks:
                with transaction.atomic(using=self.db):
                    BatchMember.objects.using(self.db).filter(batch_id__in=pks).delete()
                    Batch.objects.using(self.db).filter(pk__in=pks).delete()
            return len(pks)

        return each_batch(batch, batch_size)

    def _complete_batch(self, batch_size: int) -> int:
        members = BatchMember.objects.using(self.db)
        jobs = members._jobs()
        pending = members.filter(
            batch_id=OuterRef("pk"),
            job_id__in=jobs.filter(finished_at__isnull=True, failed_execution__isnull=True).values(
                "pk"
            ),
        )
        due = self.filter(sealed_at__isnull=False, completed_at__isnull=True)
        candidates = list(
            due.exclude(Exists(pending)).order_by("pk").values_list("pk", flat=True)[:batch_size]
        )
        if not candidates:
            return 0
        with transaction.atomic(using=self.db):
            # The lock is the first read: later reads (MySQL's snapshot)
            # see every job added before the batch was sealed again.
            locked = list(
                self.filter(pk__in=candidates, sealed_at__isnull=False, completed_at__isnull=True)
                .order_by("pk")
                .select_for_update(skip_locked=True)
            )
            done = 0
            for batch in locked:
                done += batch._complete()
        return done


class Batch(models.Model):
    """Jobs enqueued together, with callbacks when they have all run.

    One public id: ``batch.id`` is ``batch.batch_id`` (what callbacks are
    given, what ``Batch.get`` finds). The row's own key is ``pk``, kept for
    the admin's addresses and the members' foreign key; the column is still
    ``id``, so rows written by any release read the same.
    """

    row_id = models.BigAutoField(primary_key=True, db_column="id")
    batch_id = models.CharField(max_length=64, unique=True, default=new_batch_id)
    backend_alias = models.CharField(max_length=64)
    description = models.CharField(max_length=255, blank=True, default="")
    properties = models.JSONField(default=dict, blank=True)
    on_success = models.CharField(max_length=255, blank=True, default="")
    on_failure = models.CharField(max_length=255, blank=True, default="")
    on_finish = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    # Set when its block ends; None while jobs may still join.
    sealed_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    # Counted at completion (its jobs may be cleared later).
    total = models.IntegerField(default=0)
    succeeded = models.IntegerField(default=0)
    failed = models.IntegerField(default=0)

    objects = BatchQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_batch"
        default_permissions = ("view",)
        verbose_name_plural = "batches"
        indexes = [models.Index(fields=["completed_at", "sealed_at"], name="rq_batch_open")]

    def __str__(self) -> str:
        return self.description or f"Batch {self.batch_id}"

    @property
    def id(self) -> str:
        """The batch's id: ``batch_id``."""
        return self.batch_id

    @classmethod
    def get(cls, batch_id: str | int, *, using: str = "default") -> Batch:
        """The batch of id ``batch_id`` (``batch.id``, what callbacks are
        given), or of row key ``batch.pk`` (the admin's addresses).
        Raises ``Batch.DoesNotExist``."""
        batches = cls.objects.using(using)
        if isinstance(batch_id, int) and not isinstance(batch_id, bool):
            return batches.get(pk=batch_id)
        return batches.get(batch_id=batch_id)

    @property
    def is_complete(self) -> bool:
        return self.completed_at is not None

    def progress(self) -> Progress:
        """Total, pending, succeeded and failed jobs (one query; the
        stored counts once the batch is complete)."""
        if self.is_complete:
            return Progress(self.total, 0, self.succeeded, self.failed)
        return self.members.progress()

    @contextmanager
    def add(self) -> Iterator[Batch]:
        """Open this batch again: enqueues inside the block join it.

        Raises ``BatchError`` if it is complete. It is sealed again when
        the block ends, however it ends.
        """
        using = self._state.db or "default"
        batches = Batch.objects.using(using)
        with transaction.atomic(using=using):
            # Waits for a completion pass that holds the row.
            if batches.select_for_update().get(pk=self.pk).completed_at is not None:
                raise BatchError(f"Batch {self.batch_id} is complete: no job can join it.")
            batches.filter(pk=self.pk).update(sealed_at=None)
        with self.open():
            yield self

    @contextmanager
    def open(self) -> Iterator[Batch]:
        """Enqueues inside the block join this (open) batch; seal it after."""
        try:
            with batch_scope.joined(batch_scope.Scope(self.pk, self.backend_alias)):
                yield self
        finally:
            self.sealed_at = timezone.now()
            Batch.objects.using(self._state.db).filter(pk=self.pk).update(sealed_at=self.sealed_at)

    def callbacks(self) -> list[str]:
        """The task paths to enqueue now that the batch is complete."""
        outcome = self.on_success if self.failed == 0 else self.on_failure
        return [path for path in (outcome, self.on_finish) if path]

    def _complete(self) -> int:
        # The caller holds this row's lock and the transaction.
        progress = self.members.progress()
        if progress.pending:
            return 0
        # The database's clock, which retention compares with.
        self.completed_at = database_now(self._state.db or "default")
        self.total, self.succeeded, self.failed = (
            progress.total,
            progress.succeeded,
            progress.failed,
        )
        self.save(update_fields=["completed_at", "total", "succeeded", "failed"])
        for path in self.callbacks():
            try:
                task = registry.resolve_task(path, self.backend_alias)
            except UnknownTaskError:
                # Checked at batch(); a task removed since cannot run.
                continue
            task.enqueue(self.batch_id)
        return 1


class BatchMember(models.Model):
    """One job of a batch."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="members")
    # No constraint: a member outlives its job (retention), see above.
    job = models.OneToOneField(
        "robust_queue.Job",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="batch_member",
    )
    # The job was discarded or cleared without succeeding.
    failed = models.BooleanField(default=False)

    objects = BatchMemberQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_batch_member"
        default_permissions = ()

    def __str__(self) -> str:
        return f"job {self.job_id} of batch {self.batch_id}"
