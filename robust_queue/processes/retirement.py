"""A worker that must be replaced, without cutting its other jobs short.

A body that ignored its interrupt (blocked in C past its time limit or
cancel) can only be ended with its process. Its worker then claims
nothing more, lets its other running jobs finish — each within its own
time limit, which the watchdog still enforces — and exits; the supervisor
starts a new one. Giving those jobs back after ``shutdown_timeout`` would
run them again from the start. The wait is bounded for jobs with no limit
of their own: past ``retire_timeout`` the worker stops as on TERM.
"""

from __future__ import annotations

import logging
import time

from .. import conf

logger = logging.getLogger(__name__)


class Retirement:
    """Whether, why and until when a worker waits to be replaced. Begun
    from the watchdog's thread, read by the worker's loop."""

    def __init__(self, name: str) -> None:
        self.name = name
        # Set once (the first body that hung); None: not retiring.
        self.reason: str | None = None
        self._by = float("inf")

    def begin(self, result_id: str, running: int) -> None:
        """Job ``result_id`` ignored its interrupt; ``running`` other jobs
        still run here."""
        timeout = conf.get(conf.RETIRE_TIMEOUT)
        logger.error(
            "%s: job %s did not stop %ss after it was interrupted (blocked "
            "outside Python?); this worker records its failure and exits "
            "once its %d other running job(s) have finished (at most %gs; it "
            "claims nothing meanwhile), to be replaced",
            self.name,
            result_id,
            conf.get(conf.INTERRUPT_GRACE_PERIOD),
            running,
            timeout,
        )
        if self.reason is None:
            # The deadline first: the loop reads the reason, then it.
            self._by = time.monotonic() + timeout
            self.reason = f"job {result_id} ignored its interrupt"

    def overdue(self, running: int) -> bool:
        """Whether ``running`` jobs still run past ``retire_timeout``: the
        worker then stops as on TERM (they get the shutdown timeout, then
        go back to ready and run again)."""
        if time.monotonic() < self._by:
            return False
        logger.warning(
            "%s: %d job(s) still run %gs after this worker began to retire "
            "(retire_timeout); it stops as on TERM",
            self.name,
            running,
            conf.get(conf.RETIRE_TIMEOUT),
        )
        return True
