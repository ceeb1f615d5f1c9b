"""One process's view of database outages, told once each.

Every thread of a process that uses the database (the main loop, the
heartbeat, a worker's watchdog, its PostgreSQL listener, its statistics
flush) reports a failure here. The first failure of an outage logs one
warning naming what failed; the others log nothing. The first heartbeat
that gets through again ends the outage and logs one line saying the
database is back. So an outage costs one warning and one "back" line per
process, however many threads retry meanwhile and however long it lasts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)


class OutageReport:
    """Whether the database answers this process, and since when."""

    def __init__(self, name: str) -> None:
        self.name = name
        # Outages seen so far: other threads' connections died in each.
        self.outages = 0
        self._healthy_since: float | None = time.monotonic()
        self._failed_at = 0.0
        self._lock = threading.Lock()

    @property
    def is_down(self) -> bool:
        return self._healthy_since is None

    def healthy_for(self) -> float:
        """Seconds since the database answers again (0 while it does not)."""
        since = self._healthy_since
        return 0.0 if since is None else time.monotonic() - since

    def failed(self, error: BaseException, doing: str) -> bool:
        """Count a failure of ``doing``; True if it began an outage (and
        was logged)."""
        with self._lock:
            if self._healthy_since is None:
                return False
            self._healthy_since = None
            self.outages += 1
            self._failed_at = time.monotonic()
        logger.warning(
            "%s of %s failed: %s; retrying until the database is back",
            doing,
            self.name,
            _describe(error),
        )
        return True

    def recovered(self) -> bool:
        """The database answered; True if that ended an outage (and was
        logged)."""
        with self._lock:
            if self._healthy_since is not None:
                return False
            self._healthy_since = time.monotonic()
            down = self._healthy_since - self._failed_at
        logger.info("%s reaches the database again after %.1fs", self.name, down)
        return True


# Where a thread reports a database error: (error, what failed). A
# process's ``Heartbeat.failed`` (which also brings its next beat forward).
ReportFailure = Callable[[BaseException, str], None]


class FailureGate:
    """A side task's own state (a poll, a listener): it reports its first
    failure since its last success, not one per try.

    The process's report already says one line per outage; this keeps a
    side task that fails on its own (the database answers the heartbeat)
    from adding a warning per try.
    """

    def __init__(self, report: ReportFailure | None, doing: str) -> None:
        self.report = report
        self.doing = doing
        self._failing = False

    def failed(self, error: BaseException) -> None:
        if self._failing:
            return
        self._failing = True
        if self.report is not None:
            self.report(error, self.doing)
        else:
            logger.warning("%s failed: %s", self.doing, _describe(error))

    def succeeded(self) -> None:
        self._failing = False


def _describe(error: BaseException) -> str:
    # One line: drivers' messages run over several.
    return " ".join(str(error).split()) or type(error).__name__
