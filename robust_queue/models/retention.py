"""Retention: clearing old finished and failed jobs and old statistics
in small batches.

Each batch is its own short transaction, so clearing never holds locks
that claimers wait on for long. Only finished jobs and failed jobs (whose
failed execution is locked first, so a concurrent retry wins) are ever
deleted: cleanup never deletes unfinished work. Every pass also runs a
batch per step (``*_in_steps``), so that the supervisor can spread one
over many ticks; a large one logs what it does and its progress.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from .. import conf
from ..options import registry, task_retention
from ..options.task_retention import TaskRetention
from . import (
    Batch,
    BatchMember,
    FailedExecution,
    Job,
    JobDependency,
    RateLimit,
    Statistic,
    UniqueKey,
)
from .batching import Progress, Report, each_batch
from .clock import DatabaseNow
from .locking import delete_by_pk, lock_by_pk
from .sql.deadlocks import retry_on_lock_conflict

DEFAULT_BATCH_SIZE = 500
# A pass counts what it will clear up to this many rows: counting every
# row of a huge history would itself hold up a supervisor's tick.
COUNT_AT_MOST = 1_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class Retention:
    """What to clear: jobs finished or failed longer ago than these."""

    finished_older_than: timedelta | None
    failed_older_than: timedelta | None = None
    task_path: str | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    # Tasks whose finished / failed jobs have a retention of their own.
    finished_excluded: tuple[str, ...] = ()
    failed_excluded: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, own: Mapping[str, TaskRetention] | None = None) -> Retention:
        """``clear_finished_jobs_after`` / ``clear_failed_jobs_after``, for
        every task but those of ``own`` that keep such jobs their own way."""
        own = own or {}
        return cls(
            finished_older_than=conf.get(conf.CLEAR_FINISHED_JOBS_AFTER),
            failed_older_than=conf.get(conf.CLEAR_FAILED_JOBS_AFTER),
            finished_excluded=tuple(sorted(p for p, r in own.items() if r.own("finished"))),
            failed_excluded=tuple(sorted(p for p, r in own.items() if r.own("failed"))),
        )

    @classmethod
    def of_task(cls, task_path: str, kept: TaskRetention) -> Retention:
        """A task's own retention (``task_retention.py``): only what it sets
        to a duration is cleared here."""
        return cls(
            finished_older_than=_duration(kept.finished),
            failed_older_than=_duration(kept.failed),
            task_path=task_path,
        )

    def clear(
        self, using: str, *, dry_run: bool = False, report: Report | None = None
    ) -> dict[str, int]:
        """Clear (or with ``dry_run`` count) what this retention covers;
        a large pass logs its progress (or tells ``report``)."""
        if dry_run:
            return self._count(using)
        counts = {"finished": 0, "failed": 0}
        for kind, handled in self.steps(using, report=report):
            counts[kind] += handled
        return counts

    def steps(self, using: str, *, report: Report | None = None) -> Iterator[tuple[str, int]]:
        """``clear()`` a batch at a time: yields ("finished" or "failed",
        rows) after each batch, so that the caller may stop between any
        two (the supervisor's housekeeping resumes on its next tick)."""
        if self.finished_older_than is not None:
            jobs = self._finished(using)
            batch = partial(self._clear_finished_batch, jobs)
            yield from self._tracked("finished", self.finished_older_than, jobs, batch, report)
        if self.failed_older_than is not None:
            rows = self._failed(using)
            batch = partial(self._clear_failed_retrying, rows)
            yield from self._tracked("failed", self.failed_older_than, rows, batch, report)

    def _tracked(
        self,
        kind: str,
        older_than: timedelta,
        rows: QuerySet[Any],
        batch: Callable[[], int],
        report: Report | None,
    ) -> Iterator[tuple[str, int]]:
        of_task = f" of {self.task_path}" if self.task_path else ""
        what = f"{kind} job(s) older than {older_than}{of_task}"
        total = rows.order_by()[:COUNT_AT_MOST].count()
        # A caller that reports itself prints its own total at the end.
        summary, more = report is None, total >= COUNT_AT_MOST
        progress = Progress(what, total, report=report, summary=summary, more=more)
        for handled in progress.track(each_batch(batch, self.batch_size)):
            yield kind, handled

    def _count(self, using: str) -> dict[str, int]:
        counts = {"finished": 0, "failed": 0}
        if self.finished_older_than is not None:
            counts["finished"] = self._finished(using).count()
        if self.failed_older_than is not None:
            counts["failed"] = self._failed(using).count()
        return counts

    def _finished(self, using: str) -> QuerySet[Job]:
        assert self.finished_older_than is not None
        cutoff = DatabaseNow() - self.finished_older_than
        jobs = Job.objects.using(using).filter(finished_at__lt=cutoff)
        if self.finished_excluded:
            jobs = jobs.exclude(task_path__in=self.finished_excluded)
        return jobs.filter(task_path=self.task_path) if self.task_path else jobs

    def _failed(self, using: str) -> QuerySet[FailedExecution]:
        assert self.failed_older_than is not None
        cutoff = DatabaseNow() - self.failed_older_than
        rows = FailedExecution.objects.using(using).filter(created_at__lt=cutoff)
        if self.failed_excluded:
            rows = rows.exclude(job__task_path__in=self.failed_excluded)
        return rows.filter(job__task_path=self.task_path) if self.task_path else rows

    def _clear_finished_batch(self, jobs: QuerySet[Job]) -> int:
        pks = list(jobs.order_by("pk").values_list("pk", flat=True)[: self.batch_size])
        if pks:
            retry_on_lock_conflict(
                lambda: _delete_jobs(jobs.db, pks), using=jobs.db, what="Retention"
            )
        return len(pks)

    def _clear_failed_retrying(self, rows: QuerySet[FailedExecution]) -> int:
        batch = partial(self._clear_failed_batch, rows)
        return retry_on_lock_conflict(batch, using=rows.db, what="Retention")

    def _clear_failed_batch(self, rows: QuerySet[FailedExecution]) -> int:
        # The failed execution first (a concurrent retry that holds it
        # wins), then its job: the order every transition locks in.
        with transaction.atomic(using=rows.db):
            pairs = lock_by_pk(rows, "job_id", limit=self.batch_size)
            # Jobs still waiting on these never see them succeed.
            JobDependency.objects.using(rows.db).mark_parents_failed([j for _, j in pairs])
            BatchMember.objects.using(rows.db).mark_failed([j for _, j in pairs])
            delete_by_pk(rows, [pk for pk, _ in pairs])
            delete_by_pk(Job.objects.using(rows.db), sorted(j for _, j in pairs))
        return len(pairs)


def _delete_jobs(using: str, pks: list[int]) -> None:
    """Delete finished jobs by primary key (locking.py), in one transaction."""
    with transaction.atomic(using=using):
        delete_by_pk(Job.objects.using(using), pks)


def clear_statistics(
    using: str, older_than: timedelta, batch_size: int = DEFAULT_BATCH_SIZE
) -> int:
    """Delete per-minute statistics older than ``older_than``, in batches.

    The running totals (what Prometheus counters read) are never cleared.
    """
    return sum(Statistic.objects.using(using).clear_minutes_in_steps(older_than, batch_size))


def task_retentions() -> dict[str, TaskRetention]:
    """Task path -> its own retention: ``@retain`` of the declared tasks,
    with ``ROBUST_QUEUE["task_retention"]`` over it, option by option."""
    own = {}
    for task in registry.declared_tasks():
        kept = task_retention.RETAIN.of(task)
        if kept is not None:
            own[task.module_path] = kept
    for path, entry in task_retention.from_settings().items():
        own[path] = own.get(path, TaskRetention()).merged(entry)
    return own


def clear_expired(using: str | None = None) -> dict[str, int]:
    """Apply the configured retention (``clear_expired_in_steps``) at once;
    the rows cleared: finished and failed jobs, statistics."""
    counts = {"finished": 0, "failed": 0, "statistics": 0}
    for kind, handled in clear_expired_in_steps(using):
        if kind in counts:
            counts[kind] += handled
    return counts


def clear_expired_in_steps(using: str | None = None) -> Iterator[tuple[str, int]]:
    """Apply the configured retention a batch at a time, yielding (what,
    rows) after each (the supervisor's housekeeping runs a few per tick):
    each task with its own by its own cutoffs, the global one for the
    rest; then old statistics, complete batches as old as finished jobs,
    the unique keys of jobs that are gone and idle rate limit windows."""
    using = using or conf.queue_database()
    own = task_retentions()
    yield from Retention.from_settings(own).steps(using)
    for task_path, kept in own.items():
        yield from Retention.of_task(task_path, kept).steps(using)
    older = conf.get(conf.STATISTICS_RETENTION)
    minutes = Statistic.objects.using(using).clear_minutes_in_steps(older, DEFAULT_BATCH_SIZE)
    yield from _tracked("statistics", "old statistics row(s)", minutes)
    # Complete batches are kept as long as finished jobs.
    older = conf.get(conf.CLEAR_FINISHED_JOBS_AFTER)
    batches = Batch.objects.using(using).clear_completed_in_steps(older)
    yield from _tracked("batches", "complete batch(es)", batches)
    keys = UniqueKey.objects.using(using).clear_orphaned_in_steps()
    yield from _tracked("unique keys", "unique key(s) of jobs that are gone", keys)
    limits = RateLimit.objects.using(using).clear_idle_in_steps()
    yield from _tracked("rate limits", "idle rate limit window(s)", limits)


def _tracked(kind: str, what: str, steps: Iterator[int]) -> Iterator[tuple[str, int]]:
    # Not counted first: routine upkeep, and a count could cost a scan.
    progress = Progress(what, summary=False)
    return ((kind, handled) for handled in progress.track(steps))


def _duration(kept: timedelta | str | None) -> timedelta | None:
    # None (kept always) and GLOBAL (the global pass's) clear nothing here.
    return kept if isinstance(kept, timedelta) else None
