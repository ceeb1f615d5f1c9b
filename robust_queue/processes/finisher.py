"""A worker's finisher: its threads' successes written together, one commit
for several jobs, with the claims of those threads' next jobs.

A job thread whose body succeeded hands the outcome here (``write``) and
waits for it to be written, as it waits for its own write otherwise. The
finisher writes what it holds once no other job that started less than
``window`` seconds ago is still running (a longer one is not waited for),
or ``window`` seconds after the first outcome came, at most ``size`` at a
time, in one transaction: each finish fenced by its own claim row, as a
thread's own finish is (``ClaimedExecution.finish_all``). Each thread then
does what follows its write itself (signals, statistics, the attempt's
log) and runs the job claimed for it. If the write raises, each thread
writes its outcome on its own, knowing the batch may have committed; a
failing batch never loses or changes an outcome.

Failures and snoozes are never handed here: their threads write them.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from django.db import connections

from .. import conf
from ..models import ClaimedExecution, NextClaim
from ..models.sql import query_log
from ..running.finalizing import Finalized, recover

if TYPE_CHECKING:
    from .pool import Pool

logger = logging.getLogger(__name__)

# How often a thread waiting for its write checks that the finisher lives.
_ALIVE_CHECK = 1.0


@dataclass(eq=False, slots=True)
class _Outcome:
    """A success waiting to be written; ``written`` is set once it was
    (``finalized`` None: it was not, or may not have been)."""

    claimed: ClaimedExecution
    stored: Any
    written: threading.Event = field(default_factory=threading.Event)
    finalized: Finalized | None = None
    then: NextClaim | None = None


class Finisher:
    def __init__(
        self,
        size: int,
        window: float,
        *,
        using: str,
        next_claim: Callable[[int], NextClaim | None],
        pool: Pool,
    ) -> None:
        self.size = size
        self.window = window
        self.using = using
        # What to claim for n threads freed by a write (None: nothing).
        self.next_claim = next_claim
        # Whose threads hand their successes here: how many may come soon
        # (Pool.started_within); a body running for longer is not waited for.
        self.pool = pool
        self._outcomes: queue.SimpleQueue[_Outcome | None] = queue.SimpleQueue()
        # Guards _stopped: nothing is put after the stop's sentinel.
        self._lock = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="rq-finisher", daemon=True)
        self._thread.start()

    def write(
        self, claimed: ClaimedExecution, stored: Any
    ) -> tuple[Finalized | None, NextClaim | None]:
        """Write ``claimed``'s success with others' and wait for it: how it
        was written (None: it was not, the caller writes it, in doubt) and
        what was claimed for this thread with it."""
        outcome = _Outcome(claimed, stored)
        with self._lock:
            if self._stopped or not conf.preserve_finished_jobs():
                return None, None
            self._outcomes.put(outcome)
        while not outcome.written.wait(_ALIVE_CHECK):
            if not self._thread.is_alive():
                return None, None  # Never written by it: this thread writes it.
        return outcome.finalized, outcome.then

    def stop(self, timeout: float) -> None:
        """Write what is held, then end (within ``timeout`` seconds)."""
        with self._lock:
            self._stopped = True
            self._outcomes.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            stopping = False
            while not stopping and (first := self._outcomes.get()) is not None:
                query_log.forget()
                batch, stopping = self._gather(first)
                try:
                    self._write(batch)
                except Exception:  # logged; each thread then writes its own
                    logger.exception("The finisher could not write %d outcome(s)", len(batch))
                finally:
                    for outcome in batch:
                        outcome.written.set()
        finally:
            connections.close_all()

    def _gather(self, first: _Outcome) -> tuple[list[_Outcome], bool]:
        """``first`` and what comes within the window; and whether the
        stop came (the batch is then the last)."""
        batch = [first]
        held = {first.claimed.pk}
        deadline = time.monotonic() + self.window
        while len(batch) < self.size:
            try:
                outcome = self._outcomes.get_nowait()
            except queue.Empty:
                left = deadline - time.monotonic()
                if left <= 0 or self.pool.started_within(self.window, held) == 0:
                    break
                try:
                    outcome = self._outcomes.get(timeout=left)
                except queue.Empty:
                    break
            if outcome is None:
                return batch, True
            batch.append(outcome)
            held.add(outcome.claimed.pk)
        return batch, False

    def _write(self, batch: list[_Outcome]) -> None:
        then = self.next_claim(len(batch))
        try:
            finished = ClaimedExecution.finish_all([(o.claimed, o.stored) for o in batch], then)
        except Exception as exc:  # noqa: BLE001 - each thread then writes its own
            logger.debug("Writing %d outcomes together failed: %r", len(batch), exc)
            recover(self.using)
            return
        self.pool.touch([o.claimed.pk for o in batch])
        claimed = then.claimed if then is not None else []
        for n, (outcome, done) in enumerate(zip(batch, finished, strict=True)):
            outcome.finalized = Finalized.RECORDED if done else Finalized.SKIPPED
            if n < len(claimed) and then is not None:
                outcome.then = replace(then, claimed=[claimed[n]])
