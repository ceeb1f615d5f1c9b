"""Wake an idle worker as soon as a job becomes ready: PostgreSQL's
LISTEN; elsewhere a watch of the newest ready id (the dialect's ``listen``,
``models/sql/watch.py``). On PostgreSQL the LISTEN connects where
``models/sql/listen_target.py`` says; a pooled database without a direct
connection has no listener, and its workers poll.

Polling stays the correctness path; a lost notification only costs one
polling interval. A lost connection is tried again every few seconds and
reported once (outage.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ..models.sql import dialect_for
from ..models.sql.listen_target import listen_route
from .outage import FailureGate, ReportFailure

logger = logging.getLogger(__name__)

# Seconds between attempts to listen again; polling covers the gap.
RECONNECT_AFTER = 5.0


class Listener:
    def __init__(
        self,
        using: str,
        on_notify: Callable[[], None],
        report_failure: ReportFailure | None = None,
    ) -> None:
        self.using = using
        self.on_notify = on_notify
        # A database outage is the process's to report, once.
        self._failures = FailureGate(report_failure, "The listener")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rq-listen", daemon=True)

    @staticmethod
    def is_supported(using: str) -> bool:
        return dialect_for(using).supports_listen

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._listen()
            except Exception as exc:  # noqa: BLE001 - polling covers any failure
                self._failures.failed(exc)
                self._stop.wait(RECONNECT_AFTER)

    def _listen(self) -> None:
        dialect_for(self.using).listen(self._stop, self.on_notify, self._failures.succeeded)


def start_listener(
    using: str, name: str, on_notify: Callable[[], None], report_failure: ReportFailure
) -> Listener | None:
    """A started listener for the worker ``name``, or None (logged) when
    its database is pooled and no direct connection is configured."""
    route = listen_route(using) if dialect_for(using).vendor == "postgresql" else None
    if route is not None and route.polls:
        logger.info(
            "%s polls for ready jobs, without LISTEN: the %r database is behind a pooler "
            '(ROBUST_QUEUE["pooled_databases"]) and ROBUST_QUEUE["listen_database"] names '
            "no direct connection for it",
            name,
            using,
        )
        return None
    if route is not None and route.direct:
        logger.info("%s listens for ready jobs on a direct connection: %s", name, route.direct)
    listener = Listener(using, on_notify, report_failure=report_failure)
    listener.start()
    return listener
