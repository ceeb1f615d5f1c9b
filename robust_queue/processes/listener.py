"""Wake an idle worker as soon as a job becomes ready: PostgreSQL's
LISTEN; elsewhere a watch of the newest ready id (the dialect's ``listen``,
``models/sql/watch.py``).

Polling stays the correctness path; a lost notification only costs one
polling interval. A lost connection is tried again every few seconds and
reported once (outage.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..models.sql import dialect_for
from .outage import FailureGate, ReportFailure

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
