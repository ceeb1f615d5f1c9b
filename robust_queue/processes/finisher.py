"""A worker's finisher: writes its threads' successes together, one commit
for several jobs, and claims the freed threads' next jobs with it.

A job thread whose body succeeded hands the outcome here (``take``) and
waits for its next job. The finisher writes what it holds once every
running body has ended or ``window`` seconds after the first outcome came,
at most ``size`` at a time, in one transaction: each finish fenced by its
own claim row, as a thread's own finish is (``ClaimedExecution.finish_all``).
If that write raises, each outcome is written on its own, as its thread
would have written it (retried, replaced if refused, handed to the
retrier), so a failing batch never loses or changes an outcome.

Failures and snoozes are never handed here: their threads write them.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import connections

from .. import conf
from ..models import ClaimedExecution, NextClaim
from ..running.endings import DEFAULT_QUICK_TRIES, Defer, Ending
from ..running.finalizing import Finalized, FinalizePostponed, recover

if TYPE_CHECKING:
    from .pool import Pool

logger = logging.getLogger(__name__)


@dataclass(eq=False, slots=True)
class Outcome:
    """A success waiting to be written, and what follows its write."""

    claimed: ClaimedExecution
    stored: Any
    ending: Ending
    followed: Callable[[Finalized], None]


class Finisher:
    def __init__(
        self,
        size: int,
        window: float,
        *,
        using: str,
        next_claim: Callable[[int], NextClaim | None],
        defer: Defer | None = None,
    ) -> None:
        self.size = size
        self.window = window
        self.using = using
        # What to claim for n freed threads with the write (None: nothing).
        self.next_claim = next_claim
        self.defer = defer
        self.pool: Pool | None = None
        self._outcomes: queue.SimpleQueue[Outcome | None] = queue.SimpleQueue()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="rq-finisher", daemon=True)

    def start(self, pool: Pool) -> None:
        self.pool = pool
        self._thread.start()

    def take(self, claimed: ClaimedExecution, stored: Any, ending: Ending, followed: Any) -> bool:
        """Take a success to write (``performing.HandOff``); False: its
        thread writes it (finished jobs are deleted, or stopping)."""
        if self._stopped or not conf.preserve_finished_jobs():
            return False
        self._outcomes.put(Outcome(claimed, stored, ending, followed))
        return True

    def stop(self, timeout: float) -> None:
        """Write what is held, then end (within ``timeout`` seconds)."""
        self._stopped = True
        self._outcomes.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            while (first := self._outcomes.get()) is not None:
                batch, last = self._gather(first)
                self._write(batch)
                if last:
                    break
        finally:
            connections.close_all()

    def _gather(self, first: Outcome) -> tuple[list[Outcome], bool]:
        """``first`` and what comes within the window; and whether the
        stop came (the batch is then the last)."""
        assert self.pool is not None
        batch = [first]
        deadline = time.monotonic() + self.window
        while len(batch) < self.size:
            try:
                outcome = self._outcomes.get_nowait()
            except queue.Empty:
                left = deadline - time.monotonic()
                # Nothing more is coming soon: every body has ended.
                if left <= 0 or self.pool.running_bodies() == 0:
                    break
                try:
                    outcome = self._outcomes.get(timeout=left)
                except queue.Empty:
                    break
            if outcome is None:
                return batch, True
            batch.append(outcome)
        return batch, False

    def _write(self, batch: list[Outcome]) -> None:
        assert self.pool is not None
        then = self.next_claim(len(batch))
        try:
            finished = ClaimedExecution.finish_all([(o.claimed, o.stored) for o in batch], then)
        except Exception as exc:  # noqa: BLE001 - each outcome is then written on its own
            logger.debug("Writing %d outcomes together failed: %r", len(batch), exc)
            recover(self.using)
            for outcome in batch:
                self._write_one(outcome)
                self.pool.settle(outcome.claimed.pk, None)
            return
        claimed = then.claimed if then is not None else []
        for n, (outcome, done) in enumerate(zip(batch, finished, strict=True)):
            self._follow(outcome, Finalized.RECORDED if done else Finalized.SKIPPED)
            self.pool.settle(outcome.claimed.pk, claimed[n] if n < len(claimed) else None)

    def _write_one(self, outcome: Outcome) -> None:
        """As its thread would write it (``endings.finalize``), knowing
        that the batch's write may have committed (in doubt)."""
        record = outcome.ending.record
        try:
            finalized = record(DEFAULT_QUICK_TRIES if self.defer else None, True)
        except FinalizePostponed:
            assert self.defer is not None
            self.defer(
                outcome.claimed, outcome.ending.did(), lambda: outcome.followed(record(1, True))
            )
            return
        except Exception:  # noqa: BLE001 - logged; the claim stays for the supervisor
            logger.exception(
                "Job %s could not be finalized; it stays claimed until its "
                "process is failed by the supervisor",
                outcome.claimed.job_id,
            )
            return
        self._follow(outcome, finalized)

    def _follow(self, outcome: Outcome, finalized: Finalized) -> None:
        try:
            outcome.followed(finalized)
        except Exception:  # noqa: BLE001 - the outcome is recorded; logged
            logger.exception(
                "Job %s: its outcome is recorded, but what followed raised",
                outcome.claimed.job_id,
            )
