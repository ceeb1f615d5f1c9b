"""A fixed pool of worker threads with idle accounting.

Threads are daemons and long-lived, so each keeps its database connection
open across jobs whatever ``CONN_MAX_AGE`` says; a connection is replaced
only once it is broken.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Collection
from functools import partial
from typing import Any

from django.db import connections

from ..models import ClaimedExecution, NextClaim
from ..models.sql import query_log
from ..running.endings import Defer
from ..running.finalizing import Finalized
from ..running.performing import Guard, perform

logger = logging.getLogger(__name__)

# A success written by the Finisher: how, and the claim made with it for
# this thread (its ``claimed``), if any.
Written = tuple["Finalized | None", "NextClaim | None"]


class Pool:
    def __init__(
        self,
        size: int,
        *,
        using: str,
        on_idle: Callable[[], None],
        guard: Guard | None = None,
        next_claim: Callable[[], NextClaim | None] | None = None,
        keeps_claiming: Callable[[], bool] | None = None,
        defer: Defer | None = None,
    ) -> None:
        self.size = size
        self.using = using
        self.on_idle = on_idle
        self.guard = guard
        # A thread that finishes a job asks next_claim() what to claim for
        # itself in the same commit (None: the worker's loop claims for
        # it); it runs what it got only while keeps_claiming().
        self.next_claim = next_claim
        self.keeps_claiming = keeps_claiming or (lambda: True)
        # Where a finalize that keeps failing goes, so that its thread
        # takes new work (the worker's retrier); its claim stays in
        # _finalizing until it is written.
        self.defer = defer
        # Writes a success with other threads' (the worker's Finisher,
        # which sets it), and claims this thread's next job with it.
        self.hand_off: Callable[[ClaimedExecution, Any], Written] | None = None
        # Set once shutdown gave claims back: nothing starts after that.
        self._closed = False
        # Threads stuck in a body that ignored its interrupt: not waited for.
        self._abandoned: set[int] = set()
        self._jobs: queue.SimpleQueue[ClaimedExecution | None] = queue.SimpleQueue()
        # Claims posted and not yet ended, by pk (the busy count too), and
        # when each came to its thread or was last written (monotonic).
        self._running_claims: dict[int, float] = {}
        self._lock = threading.Lock()
        # Claims whose outcome is known but not yet written (or never will
        # be): shutdown must not give them back to ready.
        self._finalizing: set[int] = set()
        # Claims given back to ready at shutdown (give_back_unfinished).
        self._given_back: set[int] = set()
        self._threads = [
            threading.Thread(target=self._run, name=f"rq-pool-{i}", daemon=True)
            for i in range(size)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def idle(self) -> int:
        with self._lock:
            return self.size - len(self._running_claims)

    def running_bodies(self) -> int:
        """Claims whose body has not ended (abandoned threads included)."""
        with self._lock:
            return len(self._running_claims.keys() - self._finalizing)

    def finalizing(self) -> set[int]:
        """Claims (pks) whose body has run but whose outcome is not written.

        A thread still retrying a finalize, or one that gave up, keeps its
        claim here for as long as the process lives.
        """
        with self._lock:
            return set(self._finalizing)

    def held(self) -> set[int]:
        """Claims (pks) this pool holds: posted and not ended, or whose
        outcome is not written."""
        with self._lock:
            return self._running_claims.keys() | self._finalizing

    def give_back_unfinished(self, give_back: Callable[[set[int]], int]) -> tuple[int, set[int]]:
        """Run ``give_back(kept)`` with no body's outcome marked meanwhile.

        ``kept`` are the claims whose body has run (they must not be given
        back). A body that ends while ``give_back`` runs waits for it, so
        "has this body run?" and "give it back" are one decision: a claim
        is either kept, or given back before its body ended (it was still
        running past the shutdown timeout, and runs again). Returns what
        ``give_back`` returned and ``kept``.
        """
        with self._lock:
            self._closed = True
            kept = set(self._finalizing)
            released = give_back(kept)
            self._given_back.update(self._running_claims.keys() - kept)
            return released, kept

    def post(self, claimed: ClaimedExecution) -> None:
        with self._lock:
            self._running_claims[claimed.pk] = time.monotonic()
        self._jobs.put(claimed)

    def abandon(self, claim_pk: int) -> None:
        """Give up on the thread running claim ``claim_pk`` (its body does
        not respond): ``drain`` no longer waits for it, and shutdown never
        gives its job back to ready."""
        with self._lock:
            self._abandoned.add(claim_pk)
            self._finalizing.add(claim_pk)

    def drain(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for running jobs; True if all finished
        (abandoned threads aside)."""
        deadline = time.monotonic() + timeout
        while self._still_running():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def _still_running(self) -> bool:
        return self.live() > 0

    def started_within(self, seconds: float, besides: Collection[int]) -> int:
        """Claims, ``besides`` these, that came to their thread (or were
        written, ``touch``) less than ``seconds`` ago: the outcomes likely
        to come that soon. A body running for longer is not counted."""
        after = time.monotonic() - seconds
        with self._lock:
            return sum(
                1
                for pk, since in self._running_claims.items()
                if since > after and pk not in besides and pk not in self._abandoned
            )

    def touch(self, claim_pks: Collection[int]) -> None:
        """These claims' outcomes are written: their threads take their
        next jobs now, soon to end again (``started_within``)."""
        now = time.monotonic()
        with self._lock:
            for pk in claim_pks:
                if pk in self._running_claims:
                    self._running_claims[pk] = now

    def live(self) -> int:
        """Running jobs, abandoned threads aside."""
        with self._lock:
            return len(self._running_claims) - len(self._abandoned)

    def close(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)

    def _run(self) -> None:
        claimed = self._jobs.get()
        while claimed is not None:
            query_log.forget()
            asked: list[NextClaim] = []
            recorded: list[bool] = []
            try:
                perform(
                    claimed,
                    on_outcome=partial(self._mark_finalizing, claimed.pk),
                    guard=self.guard,
                    on_recorded=partial(self._recorded, claimed.pk, recorded),
                    then=None if self.hand_off else partial(self._ask_next_claim, asked),
                    defer=self.defer,
                    hand_off=None if self.hand_off is None else partial(self._hand, asked),
                )
            except Exception:  # noqa: BLE001 - a failure past perform()'s own handling is logged
                self._log_failure(claimed, recorded=bool(recorded))
            finally:
                self._keep_connection_healthy()
                following = self._take_over(claimed.pk, asked[0].claimed if asked else [])
                if following is None:
                    self.on_idle()
            claimed = following if following is not None else self._jobs.get()
        connections.close_all()

    def _hand(self, asked: list[NextClaim], claimed: ClaimedExecution, stored: Any) -> Any:
        """``hand_off``, keeping what it claimed for this thread in ``asked``."""
        assert self.hand_off is not None
        written, then = self.hand_off(claimed, stored)
        if then is not None:
            asked.append(then)
        return written

    def _ask_next_claim(self, asked: list[NextClaim]) -> NextClaim | None:
        """What to claim with this finish: asked as the body has succeeded,
        so pauses and stops meanwhile count."""
        then = self.next_claim() if self.next_claim is not None else None
        if then is not None:
            asked.append(then)
        return then

    def _take_over(self, ended: int, claimed: list[ClaimedExecution]) -> ClaimedExecution | None:
        """End claim ``ended`` and return the job this thread claimed with
        its finish, to run next; None: the thread is idle.

        A claim made as shutdown began (or after claims were given back) is
        given back at once, its body not run: a stopping worker starts
        nothing new. The thread counts as busy until that is done, so a
        drained pool has nothing in flight.
        """
        following = claimed[0] if claimed else None
        with self._lock:
            if following is not None and not self._closed and self.keeps_claiming():
                self._end(ended)
                self._running_claims[following.pk] = time.monotonic()
                return following
        for unwanted in claimed:
            try:
                unwanted.release(started=False)
            except Exception:  # logged; the shutdown's release gives it back
                logger.exception("Giving back job %s claimed at shutdown failed", unwanted.job_id)
        with self._lock:
            self._end(ended)
        return None

    def _end(self, claim_pk: int) -> None:
        """Claim ``claim_pk`` no longer holds its thread (under the lock)."""
        self._abandoned.discard(claim_pk)
        self._running_claims.pop(claim_pk, None)

    def _mark_finalizing(self, claim_pk: int) -> None:
        with self._lock:
            self._finalizing.add(claim_pk)
            given_back = claim_pk in self._given_back
        if given_back:
            # Its claim went back to ready before the body ended: the
            # outcome cannot be recorded (the finish finds no claim) and
            # the job runs again. Said, never silent.
            logger.warning(
                "Claim %s: the body ended after its job was given back to ready at "
                "shutdown; the job will run again",
                claim_pk,
            )

    def _recorded(self, claim_pk: int, recorded: list[bool]) -> None:
        """The outcome is written: nothing of this claim is left to keep."""
        recorded.append(True)
        with self._lock:
            self._finalizing.discard(claim_pk)

    def _log_failure(self, claimed: ClaimedExecution, *, recorded: bool) -> None:
        # perform() records task errors, retries transient database errors,
        # replaces refused outcomes and logs task_finished receivers'
        # errors itself; this is a failure past all of that.
        if recorded:
            logger.exception(
                "Job %s: its outcome is recorded, but what followed raised", claimed.job_id
            )
            return
        # The claim stays, marked, for the supervisor to fail.
        logger.exception(
            "Job %s could not be finalized; it stays claimed until its "
            "process is failed by the supervisor",
            claimed.job_id,
        )

    def _keep_connection_healthy(self) -> None:
        connection = connections[self.using]
        if connection.in_atomic_block:
            # A task left a transaction open; never let it leak into the
            # next job.
            logger.error("A task left a transaction open; closing its connection")
            connection.close()
        elif connection.errors_occurred:
            # Only after a database error: is_usable() costs a round trip.
            if connection.connection is not None and connection.is_usable():
                connection.errors_occurred = False
            else:
                connection.close()
