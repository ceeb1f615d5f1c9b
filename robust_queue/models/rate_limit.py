"""The window of one rate key (``robust_queue.options.rate_limits``): how many jobs
it admitted, and when its waiting jobs may go on.

A job with a rate key is admitted when it is dispatched (it would become
ready): under the key's row lock, if the current window has room and no
job of the key waits, it counts and goes on; otherwise it waits as a
blocked job on ``rate:<key>``. A waiting key has ``next_release`` set, and
the dispatcher releases its jobs in priority order as windows open
(``release_due``). Workers never read this table: claims of every job,
rate-limited or not, are untouched by a hot key.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence

from django.apps import apps
from django.db import models, transaction
from django.utils import timezone

from ..options.rate_limits import WAITING_PREFIX, Rate, limit_for
from .batching import each_batch
from .clock import DatabaseNow, database_now
from .job_row import J, JobRow, job_manager
from .job_state import JobState, execution_manager
from .locking import delete_by_pk, lock_with_jobs
from .sql import dialect_for

DEFAULT_BATCH_SIZE = 100
# A key whose task no longer has a rate limit releases this many a round.
UNLIMITED_RELEASE = 500


class RateLimitQuerySet(models.QuerySet["RateLimit"]):
    def admit_all(self, jobs: Sequence[J], now: dt.datetime) -> list[J]:
        """Count due ``jobs`` against their keys' windows at ``now`` (the
        database's clock); return those admitted. The others wait, blocked
        on their key. The caller holds the transaction."""
        by_key: dict[str, list[J]] = {}
        for job in jobs:
            by_key.setdefault(job.rate_key, []).append(job)
        admitted: list[J] = []
        # Keys in order: two bulk enqueues lock their rows in one order.
        for key in sorted(by_key):
            ranked = sorted(by_key[key], key=lambda job: (-job.priority, job.pk))
            admitted += self._admit(key, ranked, now)
        return admitted

    def _admit(self, key: str, jobs: list[J], now: dt.datetime) -> list[J]:
        rate = limit_for(jobs[0].declared_task())
        if rate is None:
            return jobs  # The task lost its limit since the job was enqueued.
        row = self.lock_window(key, rate, now)
        # Jobs waiting already go first: a newcomer joins them.
        room = 0 if row.next_release is not None else max(rate.to - row.count, 0)
        row.count += len(jobs[:room])
        if jobs[room:]:
            self.wait_in_line(jobs[room:], key, row, rate, now)
        row.save(
            update_fields=["count", "window_start", "window_end", "next_release", "updated_at"]
        )
        _stamp(self.db, jobs[:room], now)
        return jobs[:room]

    def lock_window(self, key: str, rate: Rate, now: dt.datetime) -> RateLimit:
        """The key's row, locked until the transaction ends, in the window
        of ``now``."""
        start, end = window(rate, now)
        # A key seen before: a lock on its row alone. (On MySQL/MariaDB the
        # upsert's duplicate check also locks the next key in the index, so
        # it would wait on a neighbouring hot key.)
        row = self.select_for_update().filter(key=key).first()
        if row is None:
            row = self._create_locked(key, start, end, now)
        if row.window_start != start:
            row.window_start, row.window_end, row.count = start, end, 0
        row.updated_at = now
        return row

    def _create_locked(
        self, key: str, start: dt.datetime, end: dt.datetime, now: dt.datetime
    ) -> RateLimit:
        # An upsert locks the row whether it inserts it or not (a plain
        # INSERT that hits the key takes a shared lock on MySQL, and two of
        # them deadlock upgrading it).
        self.bulk_create(
            [RateLimit(key=key, window_start=start, window_end=end, updated_at=now)],
            update_conflicts=True,
            update_fields=["updated_at"],
            unique_fields=dialect_for(self.db).upsert_target(["key"]),
        )
        # This transaction holds the row: a plain read sees its last version.
        return self.get(key=key)

    def wait_in_line(
        self, jobs: Sequence[JobRow], key: str, row: RateLimit, rate: Rate, now: dt.datetime
    ) -> None:
        """Block ``jobs`` on their key's line (the caller holds ``row``,
        saves it, and holds the transaction)."""
        blocked = execution_manager(jobs[0]._meta.model, JobState.BLOCKED, self.db)
        blocked.bulk_create(
            [
                blocked.model(
                    job=job,
                    queue_name=job.queue_name,
                    priority=job.priority,
                    concurrency_key=WAITING_PREFIX + key,
                    expires_at=row.window_end,
                )
                for job in jobs
            ]
        )
        due = row.window_end if row.count >= rate.to else now
        row.next_release = due if row.next_release is None else min(row.next_release, due)

    def release_due(self, batch_size: int = DEFAULT_BATCH_SIZE) -> int:
        """Release the waiting jobs of keys whose window has room, in
        priority order; returns how many went on. A key another
        transaction holds is left for the next round."""
        due = self.filter(next_release__lte=DatabaseNow()).order_by("next_release")
        keys = list(due.values_list("key", flat=True)[:batch_size])
        return sum(self._release(key) for key in keys)

    def _release(self, key: str) -> int:
        # Through the app registry: the jobs' dispatch (job.py) imports
        # this module.
        jobs = apps.get_model("robust_queue", "Job")._default_manager.using(self.db)
        blocked = execution_manager(jobs.model, JobState.BLOCKED, self.db)
        waiting = blocked.filter(concurrency_key=WAITING_PREFIX + key).order_by(
            "-priority", "job_id"
        )
        with transaction.atomic(using=self.db):
            row = self.select_for_update(skip_locked=True).filter(key=key).first()
            if row is None:
                return 0
            now = database_now(self.db)
            first = waiting.select_related("job").first()
            rate = limit_for(first.job.declared_task()) if first is not None else None
            room = self._room(row, rate, now) if first is not None else 0
            locked = lock_with_jobs(waiting, room) if room > 0 else []
            delete_by_pk(blocked, [r.pk for r in locked])
            row.count += len(locked)
            _stamp(self.db, [r.job for r in locked], now)
            jobs.dispatch_all([r.job for r in locked], immediately=True, bypass_rate=True)
            _save_next_release(row, rate, waiting.exists(), now)
        return len(locked)

    def _room(self, row: RateLimit, rate: Rate | None, now: dt.datetime) -> int:
        if rate is None:
            return UNLIMITED_RELEASE
        start, end = window(rate, now)
        if row.window_start != start:
            row.window_start, row.window_end, row.count = start, end, 0
        return max(rate.to - row.count, 0)

    def clear_idle_in_batches(self, batch_size: int = 500) -> int:
        """Delete keys that have nothing waiting and whose window ended."""
        return sum(self.clear_idle_in_steps(batch_size))

    def clear_idle_in_steps(self, batch_size: int = 500) -> Iterator[int]:
        """``clear_idle_in_batches`` a batch (one transaction) per step."""
        idle = self.filter(next_release__isnull=True, window_end__lt=DatabaseNow())

        def batch() -> int:
            with transaction.atomic(using=self.db):
                rows = idle.order_by("pk").select_for_update(skip_locked=True)
                pks = list(rows.values_list("pk", flat=True)[:batch_size])
                idle.filter(pk__in=pks).delete()
            return len(pks)

        return each_batch(batch, batch_size)


def _save_next_release(row: RateLimit, rate: Rate | None, waiting: bool, now: dt.datetime) -> None:
    """None when nothing waits; the window's end when it is full; now
    (the next dispatcher poll) when jobs wait and there is room."""
    full = rate is not None and row.count >= rate.to
    row.next_release = None if not waiting else (row.window_end if full else now)
    row.updated_at = now
    row.save()


def _stamp(using: str | None, jobs: Sequence[JobRow], now: dt.datetime) -> None:
    """Record when ``jobs`` were admitted (their ``run_after``, by the
    database's clock): a start in a later window counts again
    (``rate_gate.py``)."""
    if not jobs:
        return
    job_manager(jobs[0], using).filter(pk__in=[job.pk for job in jobs]).update(run_after=now)
    for job in jobs:
        job.run_after = now


def window(rate: Rate, now: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """The [start, end) of the window of ``rate`` that holds ``now``."""
    epoch = dt.datetime(1970, 1, 1, tzinfo=now.tzinfo)
    micros = (now - epoch) // dt.timedelta(microseconds=1)
    start = epoch + dt.timedelta(microseconds=rate.window_of(micros))
    return start, start + rate.per


class RateLimit(models.Model):
    key = models.CharField(max_length=255, unique=True)
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    count = models.IntegerField(default=0)
    # When the dispatcher should release this key's waiting jobs (None:
    # none waits).
    next_release = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = RateLimitQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_rate_limit"
        default_permissions = ()
        indexes = [models.Index(fields=["next_release"], name="rq_rate_limit_release")]

    def __str__(self) -> str:
        return f"rate limit {self.key}: {self.count} since {self.window_start}"
