"""The worker's retrier: outcomes a job thread could not write.

A job thread whose finalize fails more than briefly hands it here
(``performing.Defer``) and takes new work. One thread per worker process
retries every pending write, each once per round with its own back-off;
the claim row stays the fence (a write that finds it gone does nothing).
While ``limit`` writes wait, the worker claims nothing (``is_full``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import connections

from ..backoff import exponential
from ..models.sql import query_log
from ..running.finalizing import DEFAULT_BACKOFF, DEFAULT_MAX_BACKOFF, FinalizePostponed

if TYPE_CHECKING:
    from ..models import ClaimedExecution

logger = logging.getLogger(__name__)

# While the worker stops, a pending write is tried at least this often.
STOPPING_MAX_BACKOFF = 0.5


@dataclass
class _Pending:
    job_id: int
    did: str  # what the body did (it returned ..., it raised ...)
    resume: Callable[[], None]
    tries: int = 0
    due: float = 0.0


class FinalizeRetrier:
    def __init__(self, limit: int, *, name: str, on_settled: Callable[[], None]) -> None:
        self.limit = limit
        self.name = name
        # Called once a pending write is settled: the worker may claim again.
        self.on_settled = on_settled
        self._pending: dict[int, _Pending] = {}
        # Writes that failed past a passing refusal: not tried again.
        self._given_up: dict[int, str] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._ceiling = DEFAULT_MAX_BACKOFF
        self._thread = threading.Thread(target=self._run, name="rq-finalize-retrier", daemon=True)
        self._thread.start()

    def defer(self, claimed: ClaimedExecution, did: str, resume: Callable[[], None]) -> None:
        """Take on ``claimed``'s write (``performing.Defer``)."""
        with self._lock:
            self._pending[claimed.pk] = _Pending(claimed.job_id, did, resume, due=time.monotonic())
            count = len(self._pending)
        logger.warning(
            "%s: the outcome of job %s (%s) could not be written yet; its "
            "retrier takes it on and the thread takes new work (%d pending)",
            self.name,
            claimed.job_id,
            did,
            count,
        )
        if count >= self.limit:
            logger.warning(
                "%s has %d outcome(s) waiting to be written (max_pending_finalizes): "
                "it claims no more jobs until they are",
                self.name,
                count,
            )
        self._wake.set()

    def is_full(self) -> bool:
        """Whether ``limit`` writes are pending: claim nothing more."""
        with self._lock:
            return len(self._pending) >= self.limit

    def pending(self) -> dict[int, str]:
        """The unwritten outcomes: claim pk -> what its body did."""
        with self._lock:
            return {**self._given_up, **{pk: item.did for pk, item in self._pending.items()}}

    def stop(self, deadline: float) -> dict[int, str]:
        """Keep trying, often, until nothing is pending or ``deadline``
        (``time.monotonic()``) passes; then stop. Returns what is left."""
        with self._lock:
            self._ceiling = STOPPING_MAX_BACKOFF
            for item in self._pending.values():
                item.due = min(item.due, time.monotonic())
        self._wake.set()
        while self._pending and time.monotonic() < deadline:
            time.sleep(0.05)
        self._stopping.set()
        self._wake.set()
        # A write blocked on a lock is not waited for: its claim is left.
        self._thread.join(timeout=0.1)
        return self.pending()

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                query_log.forget()
                claim_pk, wait = self._next_due()
                if claim_pk is None:
                    self._wake.wait(wait)
                    self._wake.clear()
                else:
                    self._try(claim_pk)
        finally:
            connections.close_all()

    def _next_due(self) -> tuple[int | None, float]:
        """The pending write due now, or None and how long to wait."""
        now = time.monotonic()
        with self._lock:
            if not self._pending:
                return None, 1.0
            claim_pk, item = min(self._pending.items(), key=lambda entry: entry[1].due)
        return (claim_pk, 0.0) if item.due <= now else (None, item.due - now)

    def _try(self, claim_pk: int) -> None:
        with self._lock:
            item = self._pending[claim_pk]
        try:
            item.resume()
        except FinalizePostponed as exc:
            self._postpone(item, exc)
            return
        except Exception:
            # Not a database's passing refusal: trying again would repeat
            # it. The claim stays for the supervisor to fail.
            logger.exception(
                "%s: the outcome of job %s (%s) cannot be written; it stays "
                "claimed until its process is failed by the supervisor",
                self.name,
                item.job_id,
                item.did,
            )
            with self._lock:
                self._given_up[claim_pk] = self._pending.pop(claim_pk).did
        else:
            with self._lock:
                del self._pending[claim_pk]
        self.on_settled()

    def _postpone(self, item: _Pending, exc: FinalizePostponed) -> None:
        item.tries += 1
        delay = exponential(DEFAULT_BACKOFF, item.tries, self._ceiling)
        item.due = time.monotonic() + delay
        # Tries 1, 2, 4, 8...: a long outage does not flood the log.
        if item.tries & (item.tries - 1) == 0:
            logger.warning(
                "%s: writing the outcome of job %s failed again (try %d: %s); retrying in %.1fs",
                self.name,
                item.job_id,
                item.tries,
                exc.__cause__ or exc,
                delay,
            )
