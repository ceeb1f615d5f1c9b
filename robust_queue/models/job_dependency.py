"""Jobs that wait for others (``robust_queue.enqueue_after``).

A waiting job is blocked on the key ``dep:`` (READY to Django, like any
blocked job) and has one row here per parent it still waits on. The
dispatcher's pass (``release_all_in_batches``) locks waiting jobs whose
parents have settled, ``SKIP LOCKED``, by ascending id, and in one
transaction either makes them wait on fewer parents, releases them to
their normal dispatch (ready, scheduled, or blocked by their own limits),
or fails them with ``DependencyFailedError``; their own dependents follow
in the next round. Two dispatchers never move one job twice, and a crash
leaves the rows for the next pass.

A parent settles when it has finished (success), failed for good (a
failed execution, cancelled ones too), or is gone. A job that is gone
had succeeded (``preserve_finished_jobs=False``, retention) unless the
row says ``parent_failed``: discarding an unfinished or failed job, or
clearing a failed one, sets it in the same transaction.

Below ``job.py``: the job and execution tables are reached through the
job's fields (``job_state.execution_manager``), never imported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from django.db import models, transaction
from django.db.models import Exists, OuterRef, Subquery

from ..exceptions import DependencyError, DependencyFailedError
from .clock import DatabaseNow
from .error_record import error_record
from .job_row import J, JobRow
from .job_state import JobState, execution_manager
from .locking import delete_by_pk, lock_by_pk
from .sql.deadlocks import retry_on_lock_conflict
from .statistics import record_jobs

# The blocked key of a job waiting for its parents. Concurrency groups may
# not start with it (concurrency.py); concurrency upkeep skips it.
WAITING_KEY = "dep:"
DEFAULT_BATCH_SIZE = 500
# One pass moves at most this many batches (each level of a failed chain
# is one more round).
MAX_ROUNDS = 20


class JobDependencyQuerySet(models.QuerySet["JobDependency"]):
    def parents_of(self, jobs: Sequence[JobRow]) -> dict[str, int]:
        """The job id of every parent ``jobs`` name (``pending_parents``).

        Raises ``DependencyError`` (before anything is written) for a
        parent that is not a job of this database, belongs to another
        backend, or has failed for good.
        """
        wanted = {result_id for job in jobs for result_id in job.pending_parents}
        rows = self._jobs().filter(result_id__in=sorted(wanted))
        found = {
            result_id: (pk, alias, failed is not None)
            for result_id, pk, alias, failed in rows.values_list(
                "result_id", "pk", "backend_alias", "failed_execution__id"
            )
        }
        for job in jobs:
            for result_id in job.pending_parents:
                _check_parent(job, result_id, found.get(result_id), self.db)
        return {result_id: pk for result_id, (pk, _, _) in found.items()}

    def wait_all(self, jobs: Sequence[J], parents: Mapping[str, int]) -> list[J]:
        """Make each of ``jobs`` (just inserted) wait on those of its
        parents that have not finished; return the jobs left with none.

        The parents are locked (by id, ascending) so that a concurrent
        discard sees these rows; the caller holds the enqueue's transaction.
        """
        ids = sorted({parents[result_id] for job in jobs for result_id in job.pending_parents})
        locked = self._jobs().filter(pk__in=ids).order_by("pk").select_for_update()
        finished = dict(locked.values_list("pk", "finished_at"))
        missing = [pk for pk in ids if pk not in finished]
        if missing:
            raise DependencyError(f"Parent job(s) {missing} were deleted while enqueueing.")
        done = {pk for pk in ids if finished[pk] is not None}
        rows: list[JobDependency] = []
        waiting: list[J] = []
        free: list[J] = []
        for job in jobs:
            pending = sorted({parents[r] for r in job.pending_parents} - done)
            rows += [JobDependency(job_id=job.pk, parent_id=pk) for pk in pending]
            (waiting if pending else free).append(job)
        self.bulk_create(rows)
        blocked = execution_manager(self._job_model(), JobState.BLOCKED, self.db)
        blocked.bulk_create([_waiting_row(blocked.model, job) for job in waiting])
        return free

    def mark_parents_failed(self, parent_ids: Sequence[int]) -> None:
        """Record that these parents will never succeed (they are being
        discarded or cleared); the caller holds that transaction."""
        if parent_ids:
            self.filter(parent_id__in=parent_ids, parent_failed=False).update(parent_failed=True)

    def release_all_in_batches(self, batch_size: int = DEFAULT_BATCH_SIZE) -> int:
        """Release or fail waiting jobs whose parents have settled; return
        how many moved. Runs again while a round moved any (the
        dependents of jobs failed in one round fail in the next)."""
        moved = 0
        for _ in range(MAX_ROUNDS):
            batch = partial(self._release_batch, batch_size)
            count = retry_on_lock_conflict(batch, using=self.db, what="Dependencies")
            moved += count
            if not count:
                break
        return moved

    def _release_batch(self, batch_size: int) -> int:
        with transaction.atomic(using=self.db):
            released, failed = self._release_locked(batch_size)
        # Failed without running: counted with the discarded and cancelled.
        record_jobs(failed, using=self.db or "default", column="discarded")
        return released + len(failed)

    def _release_locked(self, batch_size: int) -> tuple[int, list[tuple[str, str]]]:
        """Release or fail one batch of waiting jobs (the caller's
        transaction): how many were released, (queue, task) of each failed."""
        settled = self.exclude(Exists(self._pending_parent()))
        ids = settled.order_by("job_id").values_list("job_id", flat=True).distinct()
        candidates = list(ids[:batch_size])
        if not candidates:
            return 0, []
        blocked = execution_manager(self._job_model(), JobState.BLOCKED, self.db)
        waiting = blocked.filter(job_id__in=candidates, concurrency_key=WAITING_KEY)
        locked = lock_by_pk(waiting, "job_id")
        self._forget_stale(candidates, {job_id for _, job_id in locked}, waiting)
        released, failed = self._settle({job_id: pk for pk, job_id in locked})
        delete_by_pk(blocked, sorted(pk for pk, job_id in locked if job_id in released))
        delete_by_pk(blocked, sorted(pk for pk, job_id in locked if job_id in failed))
        ended = self._fail(failed)
        if released:
            jobs = self._jobs().filter(pk__in=sorted(released)).order_by("pk")
            self._jobs().dispatch_all(list(jobs))
        return len(released), ended

    def _settle(self, locked: Mapping[int, int]) -> tuple[set[int], dict[int, str]]:
        """Read the parents of the locked jobs in one statement; forget the
        rows of parents that succeeded. Returns the jobs to release, and
        the jobs to fail with the parent that failed."""
        rows = self.filter(job_id__in=sorted(locked)).annotate(
            pending=Exists(self._pending_parent()),
            failed_now=Exists(
                self._jobs().filter(pk=OuterRef("parent_id"), failed_execution__isnull=False)
            ),
            parent_result_id=Subquery(
                self._jobs().filter(pk=OuterRef("parent_id")).values("result_id")[:1]
            ),
        )
        fields = ("pk", "job_id", "parent_id", "parent_failed", "pending", "failed_now")
        waiting: set[int] = set()
        failed: dict[int, str] = {}
        done: list[int] = []
        for pk, job_id, parent_id, parent_failed, pending, failed_now, result_id in rows.order_by(
            "pk"
        ).values_list(*fields, "parent_result_id"):
            if pending:
                waiting.add(job_id)
                continue
            # Gone without the flag: it had succeeded (see the module doc).
            if failed_now or parent_failed:
                failed.setdefault(job_id, result_id or f"#{parent_id}")
            done.append(pk)
        delete_by_pk(self, done)
        released = set(locked) - waiting - set(failed)
        return released, failed

    def _fail(self, failed: Mapping[int, str]) -> list[tuple[str, str]]:
        """End the jobs of ``failed`` FAILED with ``DependencyFailedError``;
        (queue, task) of each."""
        if not failed:
            return []
        rows = []
        manager = execution_manager(self._job_model(), JobState.FAILED, self.db)
        jobs = list(self._jobs().filter(pk__in=sorted(failed)).order_by("pk").select_for_update())
        for job in jobs:
            error = error_record(
                DependencyFailedError(
                    f"Job {job.result_id} did not run: its parent job {failed[job.pk]} "
                    "failed, was cancelled or was discarded."
                )
            )
            job.errors = [*job.errors, error]
            rows.append(manager.model(job=job, error=error))
        self._jobs().bulk_update(jobs, ["errors"])
        manager.bulk_create(rows)
        # Their remaining rows (parents still pending) are moot now.
        delete_by_pk(
            self, sorted(self.filter(job_id__in=sorted(failed)).values_list("pk", flat=True))
        )
        return [(job.queue_name, job.task_path) for job in jobs]

    def _forget_stale(self, candidates: list[int], locked: set[int], waiting: Any) -> None:
        # Rows of jobs that no longer wait ("run now", cancel, discard):
        # jobs neither locked here nor still waiting (another pass holds those).
        others = set(candidates) - locked
        if others:
            still = set(waiting.filter(job_id__in=sorted(others)).values_list("job_id", flat=True))
            stale = self.filter(job_id__in=sorted(others - still)).values_list("pk", flat=True)
            delete_by_pk(self, sorted(stale))

    def _pending_parent(self) -> Any:
        """The parent of ``OuterRef`` row, if it is still to run or running."""
        return self._jobs().filter(
            pk=OuterRef("parent_id"), finished_at__isnull=True, failed_execution__isnull=True
        )

    def _job_model(self) -> type[models.Model]:
        model = self.model._meta.get_field("job").related_model
        assert isinstance(model, type) and issubclass(model, models.Model)
        return model

    def _jobs(self) -> Any:
        return self._job_model()._default_manager.using(self.db)


def _check_parent(
    job: JobRow, result_id: str, found: tuple[int, str, bool] | None, using: str
) -> None:
    if found is None:
        raise DependencyError(
            f"Job {job.task_path} cannot wait on {result_id!r}: no job of database "
            f"{using!r} has that id (unknown, or a job of another backend's database)."
        )
    _, alias, failed = found
    if alias != job.backend_alias:
        raise DependencyError(
            f"Job {job.task_path} of backend {job.backend_alias!r} cannot wait on job "
            f"{result_id} of backend {alias!r}."
        )
    if failed:
        raise DependencyError(
            f"Job {job.task_path} cannot wait on job {result_id}: it has failed for good."
        )


def _waiting_row(model: type[models.Model], job: JobRow) -> models.Model:
    # expires_at means nothing for this key (concurrency upkeep skips it).
    return model(
        job=job,
        queue_name=job.queue_name,
        priority=job.priority,
        concurrency_key=WAITING_KEY,
        expires_at=DatabaseNow(),
    )


class JobDependency(models.Model):
    """One parent a waiting job still waits on."""

    # No constraints (the rows outlive neither job for long, see above) and
    # nothing for Django's delete collector to do when a job is deleted.
    job = models.ForeignKey(
        "robust_queue.Job",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="dependencies",
    )
    parent = models.ForeignKey(
        "robust_queue.Job",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="dependents",
    )
    # The parent was discarded or cleared without succeeding.
    parent_failed = models.BooleanField(default=False)

    objects = JobDependencyQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_job_dependency"
        default_permissions = ()
        constraints = [
            models.UniqueConstraint(fields=["job", "parent"], name="rq_job_dependency_unique"),
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} waits on job {self.parent_id}"
