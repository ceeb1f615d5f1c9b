"""The worker: claims ready jobs for its idle threads and runs them."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from django.db import DatabaseError

from ..models import (
    ClaimedExecution,
    NextClaim,
    ProcessCommand,
    ReadyExecution,
    claims_in_doubt,
    statistics,
)
from ..models.error_record import error_record
from ..models.sql import dialect_for
from ..models.sql.deadlocks import retry_on_lock_conflict
from ..running import steps
from ..running.finalizing import record_failure
from .backoff import IdleBackoff
from .base import Runnable
from .config import WorkerConfig
from .finalize_retrier import FinalizeRetrier
from .finisher import Finisher
from .listener import Listener, start_listener
from .memory import rss_mib
from .outage import FailureGate
from .pool import Pool
from .retirement import Retirement
from .selector import Plan, QueueSelector
from .watchdog import Watch, Watchdog

logger = logging.getLogger(__name__)

# How often a quiet worker's loop looks around (statistics, claims in doubt).
QUIET_PAUSE = 1.0
# Why a worker stopped from the admin ended (its supervisor replaces it).
STOPPED_FROM_ADMIN = "asked to stop from the admin"


class Worker(Runnable):
    kind = "worker"
    takes_commands = True

    def __init__(self, config: WorkerConfig, *, shutdown_timeout: float, **kwargs: Any) -> None:
        self.config = config
        self.shutdown_timeout = shutdown_timeout
        super().__init__(**kwargs)
        self.selector = QueueSelector(
            config.queues, using=self.using, order=config.order, weights=config.weights
        )
        self.pool: Pool | None = None
        self.listener: Listener | None = None
        self.watchdog: Watchdog | None = None
        self.retrier: FinalizeRetrier | None = None
        self.finisher: Finisher | None = None
        self.backoff = IdleBackoff(config.polling_interval, config.idle_polling_ceiling)
        # Jobs claimed since start, for max_jobs.
        self.claimed_count = 0
        # (thread, result id) of bodies that ignored their interrupt.
        self._stuck: list[tuple[threading.Thread, str]] = []
        # Set by the watchdog when a body ignored its interrupt.
        self.retirement = Retirement(self.name)
        self._last_pause = 0.0
        self._statistics_failures = FailureGate(None, "Statistics flush")
        # The last claim plan, for threads that claim for themselves.
        self._plan: Plan | None = None
        # Quieted from the admin: claims nothing more, stays alive.
        self.quiet = False

    @property
    def metadata(self) -> dict[str, Any]:
        return {
            "queues": list(self.config.queues),
            "order": self.config.order,
            "threads": self.config.threads,
            "polling_interval": self.config.polling_interval,
            "max_jobs": self.config.max_jobs,
            "max_memory": self.config.max_memory,
            "finish_batch": self.config.finish_batch,
        }

    def boot(self) -> None:
        statistics.recorder.start_buffering()
        assert self.process is not None and self.heartbeat is not None
        self._statistics_failures = FailureGate(self.heartbeat.failed, "Statistics flush")
        self.watchdog = Watchdog(
            using=self.using,
            process_pk=self.process.pk,
            on_hung=self._hung,
            report_failure=self.heartbeat.failed,
        )
        self.watchdog.start()
        self.retrier = FinalizeRetrier(
            self.config.max_pending_finalizes, name=self.name, on_settled=self.wakeup.wake
        )
        self.pool = Pool(
            self.config.threads,
            using=self.using,
            on_idle=self.wakeup.wake,
            guard=self.watchdog.guard,
            next_claim=self._next_claim,
            keeps_claiming=self._keeps_claiming,
            defer=self.retrier.defer,
        )
        if self.config.finish_batch > 1:
            self.finisher = Finisher(
                self.config.finish_batch,
                self.config.finish_window,
                using=self.using,
                next_claim=self._next_claims,
                pool=self.pool,
            )
            self.pool.hand_off = self.finisher.write
        if self.config.listen and Listener.is_supported(self.using):
            self.listener = start_listener(
                self.using, self.name, self._notified, self.heartbeat.failed
            )
        limit = self.config.max_memory
        if limit is not None and (rss := rss_mib()) > limit:
            logger.warning(
                "%s starts at %.0f MiB, over max_memory (%s MiB): it will be "
                "recycled after every job",
                self.name,
                rss,
                limit,
            )

    def run_once(self) -> float:
        assert self.pool is not None and self.process is not None
        self._give_back_claims_in_doubt()
        if self._recycling():
            if self.pool.live() == 0 or self.retirement.overdue(self.pool.live()):
                self.stopping = True
                return 0
            # Its other jobs may run for long (retire_timeout): keep
            # their statistics flowing meanwhile.
            self._flush_statistics(statistics.recorder.flush_if_due)
            # A thread that frees up wakes us.
            return self.config.polling_interval
        if self.quiet:
            self._plan = None
            self._flush_statistics(statistics.recorder.flush_if_due)
            return max(self.config.polling_interval, QUIET_PAUSE)
        idle = self.pool.idle
        if idle == 0 or self._finalizes_full():
            # Busy threads claim their next jobs themselves (_next_claim):
            # keep the queues they claim from current (pauses, new names).
            self._plan = self._current_plan()
            self._flush_statistics(statistics.recorder.flush_if_due)
            # A thread that frees up wakes us.
            return self.config.polling_interval
        if self.config.max_jobs is not None:
            idle = min(idle, self.config.max_jobs - self.claimed_count)
        claimed = self._claim(idle)
        self.claimed_count += len(claimed)
        for row in claimed:
            self.pool.post(row)
        self._flush_statistics(statistics.recorder.flush_if_due)
        if not claimed:
            pause = self.backoff.next_pause()
            if pause == self.backoff.ceiling and self._last_pause != pause:
                logger.debug("%s is idle: it polls every %ss", self.name, pause)
            self._last_pause = pause
            return pause
        self._last_pause = 0.0
        self.backoff.reset()
        return 0 if len(claimed) == idle else self.config.polling_interval

    def _give_back_claims_in_doubt(self) -> None:
        """Claims that raised but may have committed (``claims_in_doubt``):
        once the database answers, give back what they took. A database
        error here fails the round as any other; they stay noted."""
        assert self.process is not None and self.pool is not None
        if not claims_in_doubt.noted(self.using, self.process.pk):
            return
        mine = ClaimedExecution.objects.using(self.using)
        released = mine.release_in_doubt(self.process.pk, keep=self.pool.held())
        if released:
            logger.warning(
                "%s gave %d job(s) back to ready: a claim's answer was lost, "
                "but the database had committed it; they will run",
                self.name,
                released,
            )

    def _current_plan(self) -> Plan | None:
        """The selector's plan, if threads may claim from it themselves."""
        if self.selector.rotation.rotates:
            return None  # Each plan is a claim round of its own.
        return self.selector.plan()

    def _next_claim(self) -> NextClaim | None:
        """What a pool thread finishing a job claims for itself with the
        same commit (``NextClaim``); None: the worker's loop claims for it.

        Only for the plain case, one claim query that no cap limits, and
        never while the worker stops, recycles or counts its jobs
        (max_jobs): those stay with the loop.
        """
        plan = self._plan
        if not plan or len(plan) != 1 or not self._keeps_claiming():
            return None
        if self.config.max_jobs is not None:
            return None
        queue_name, excluded = plan[0]
        if queue_name is not None and queue_name in self.selector.caps:
            return None
        assert self.process is not None
        return NextClaim(
            queue_name,
            excluded,
            self.selector.paused_tasks,
            self.process.pk,
            self.name,
            resume=True,
        )

    def _next_claims(self, n: int) -> NextClaim | None:
        """What the finisher claims for ``n`` threads freed by its write
        (``_next_claim``'s rules)."""
        then = self._next_claim()
        if then is not None:
            then.limit = n
        return then

    def _keeps_claiming(self) -> bool:
        return (
            not self.stopping
            and not self.quiet
            and self.recycled is None
            and self.retirement.reason is None
            and not self._finalizes_full()
        )

    def _finalizes_full(self) -> bool:
        """Whether max_pending_finalizes outcomes wait to be written: a
        worker that cannot write claims nothing more until they are."""
        return self.retrier is not None and self.retrier.is_full()

    def _notified(self) -> None:
        """A job became ready (PostgreSQL's NOTIFY, the watch elsewhere): poll
        now, and often."""
        self.backoff.reset()
        self.wakeup.wake()

    def _recycling(self) -> bool:
        """Whether this worker makes way for a fresh one (it says so once)."""
        assert self.pool is not None
        if self.recycled is None and self.retirement.reason is not None:
            self.recycled = self.retirement.reason  # _hung() said so
        if self.recycled is None:
            self.recycled = self._recycle_reason()
            if self.recycled is not None:
                logger.info(
                    "%s recycles (%s): it claims no more jobs, finishes %d "
                    "running job(s) and exits",
                    self.name,
                    self.recycled,
                    self.pool.size - self.pool.idle,
                )
        return self.recycled is not None

    def _recycle_reason(self) -> str | None:
        """Why this worker should make way for a fresh one, if it should
        (never while quiet: a fresh one would claim)."""
        if self.quiet:
            return None
        max_jobs, max_memory = self.config.max_jobs, self.config.max_memory
        if max_jobs is not None and self.claimed_count >= max_jobs:
            return f"max_jobs reached: {self.claimed_count} job(s) claimed"
        # Only after a job: a worker that starts over the limit would
        # otherwise be replaced in a loop while the queue is empty.
        if max_memory is not None and self.claimed_count and (rss := rss_mib()) > max_memory:
            return f"max_memory reached: {rss:.0f} MiB resident, over {max_memory} MiB"
        return None

    def obey(self, command: str) -> None:
        """Quiet: claim no more jobs (those running finish) and stay alive.
        Stop: stop as on TERM; the exit is clean, so the supervisor starts
        a fresh worker at once (unless it is stopping itself)."""
        assert self.process is not None
        if command == ProcessCommand.QUIET:
            if not self.quiet:
                logger.info(
                    "%s quiets (asked from the admin): it claims no more jobs and "
                    "finishes the ones it runs",
                    self.name,
                )
            self.quiet = True
            self._plan = None
        elif command == ProcessCommand.STOP:
            if not self.stopping:
                logger.info("%s stops (asked from the admin), as on TERM", self.name)
            self.recycled = self.recycled or STOPPED_FROM_ADMIN
            self.stop()
        else:
            return
        self.process.acknowledge(command)

    def shutdown(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + (0 if self.immediately else self.shutdown_timeout)
        if self.listener is not None:
            self.listener.stop()
        if self.pool is not None:
            if not self._drain(self.pool):
                # Bodies that ended but whose outcome is not written yet
                # stay claimed (_release_unfinished), they are not given back.
                running = self.pool.running_bodies()
                if running > 0:
                    logger.warning(
                        "%s: %d job(s) still running are given back to the queue "
                        "and will run again",
                        self.name,
                        running,
                    )
            self.pool.close()
        if self.finisher is not None:
            # What it holds is written; what comes after, its threads write.
            self.finisher.stop(max(deadline - time.monotonic(), 0.0))
        if self.watchdog is not None:
            # It may be recording a hung job's failure: let it finish.
            self.watchdog.stop(wait=self.shutdown_timeout)
        # Outcomes not written yet get what is left of the shutdown timeout.
        unwritten = self.retrier.stop(deadline) if self.retrier is not None else {}
        # Bodies given back keep their last checkpoint: written while the
        # claims are still this worker's (the writes are fenced by them).
        steps.write_pending()
        self._release_unfinished(unwritten)
        self._flush_statistics(statistics.recorder.stop_buffering)

    def _flush_statistics(self, flush: Callable[[], object]) -> None:
        """Write the kept statistics; while the database is away they stay
        in memory for the next flush (a worker that exits loses them)."""
        try:
            written = flush()
        except DatabaseError as exc:
            self._statistics_failures.failed(exc)
            return
        if written:
            self._statistics_failures.succeeded()

    def _hung(self, watch: Watch) -> None:
        """A body ignored its interrupt: record its failure, claim nothing
        more, and exit once the other jobs have finished (bounded by their
        own limits and retire_timeout), never giving them back to run
        again; the supervisor starts a new worker. Runs in the watchdog."""
        assert self.pool is not None
        self.pool.abandon(watch.claim_pk)
        self._stuck += [
            (t, watch.result_id) for t in threading.enumerate() if t.ident == watch.thread_id
        ]
        self.retirement.begin(watch.result_id, self.pool.live())
        self.wakeup.wake()
        claimed = (
            ClaimedExecution.objects.using(self.using)
            .select_related("job")
            .filter(pk=watch.claim_pk)
            .first()
        )
        if claimed is None:
            return  # It ended meanwhile.
        error = watch.stop_error()
        retry_in = None if watch.cancelled else claimed.job.retry_in(error)
        record_failure(claimed, error_record(error), retry_in)

    def stuck_threads(self) -> list[str]:
        return [f"{t.name} (job {result_id})" for t, result_id in self._stuck if t.is_alive()]

    def _release_unfinished(self, unwritten: dict[int, str]) -> None:
        """Give back to ready the claims whose body has not run.

        A claim whose body ran but whose outcome is not written (a thread
        still retrying, or one that gave up) stays claimed: running it
        again silently is worse than the supervisor failing it. The row
        stays for that, with what the bodies did (``unwritten``: claim pk
        -> e.g. "it returned 3"), which the failure then says.
        """
        assert self.process is not None
        mine = ClaimedExecution.objects.using(self.using).filter(process_id=self.process.pk)

        def give_back(kept: set[int]) -> int:
            return mine.exclude(pk__in=kept).release_all()

        if self.pool is not None:
            released, kept = self.pool.give_back_unfinished(give_back)
        else:
            released, kept = give_back(set()), set()
        if released:
            logger.warning(
                "%s gave %d unfinished job(s) back to ready: they will run again",
                self.name,
                released,
            )
        stuck = list(mine.filter(pk__in=kept).values_list("job_id", flat=True)) if kept else []
        if stuck:
            self.leaves_claims = True
            self._note_unrecorded({pk: did for pk, did in unwritten.items() if pk in kept})
            logger.error(
                "%s: job(s) %s ran but their outcome could not be recorded; they "
                "stay claimed for the supervisor to fail",
                self.name,
                stuck,
            )

    def _note_unrecorded(self, outcomes: dict[int, str]) -> None:
        assert self.process is not None
        try:
            self.process.note_unrecorded(outcomes)
        except DatabaseError as exc:
            # Their failure then says only that they may have run.
            logger.warning("%s could not note what its unrecorded jobs did: %s", self.name, exc)

    def _drain(self, pool: Pool) -> bool:
        """Wait up to the shutdown timeout for running jobs; a stop-now
        request (QUIT, a second Ctrl-C) cuts the wait short."""
        deadline = time.monotonic() + self.shutdown_timeout
        reported = float("-inf")
        while not self.immediately:
            if pool.drain(min(0.1, max(deadline - time.monotonic(), 0.0))):
                return True
            now = time.monotonic()
            if now >= deadline:
                return False
            if now - reported >= 1.0:
                reported = now
                logger.info(
                    "%s waiting for %d running job(s), %.0f s left",
                    self.name,
                    pool.size - pool.idle,
                    deadline - now,
                )
        return pool.drain(0)

    def _claim(self, limit: int) -> list[ClaimedExecution]:
        assert self.process is not None
        claimed: list[ClaimedExecution] = []
        plan = self.selector.plan()
        self._plan = None if self.selector.rotation.rotates else plan
        for queue_name, excluded in plan:
            try:
                claimed += retry_on_lock_conflict(
                    partial(self._claim_from, queue_name, excluded, limit - len(claimed)),
                    using=self.using,
                    what=f"{self.name} claim",
                )
            except DatabaseError as exc:
                if dialect_for(self.using).lock_conflict(exc) is None:
                    raise
                # Logged in one line already; the next round claims again.
                break
            if len(claimed) >= limit or self.stopping:
                break
        return claimed

    def _claim_from(
        self, queue_name: str | None, excluded: tuple[str, ...], limit: int
    ) -> list[ClaimedExecution]:
        assert self.process is not None
        cap = self.selector.caps.get(queue_name) if queue_name is not None else None
        return ReadyExecution.objects.using(self.using).claim(
            limit,
            process_id=self.process.pk,
            worker_id=self.name,
            queue_name=queue_name,
            exclude_queues=excluded,
            paused_tasks=self.selector.paused_tasks,
            max_concurrency=cap,
            resume=True,
        )
