"""Signal handlers that only record the signal and wake the loop."""

from __future__ import annotations

import signal
from collections.abc import Callable

GRACEFUL = (signal.SIGTERM, signal.SIGINT)
IMMEDIATE = (signal.SIGQUIT,)
HANDLED = (*GRACEFUL, *IMMEDIATE)


class SignalQueue:
    """Collects received signals; ``wake`` interrupts the owner's sleep."""

    def __init__(self, wake: Callable[[], None]) -> None:
        self.wake = wake
        self.pending: list[int] = []

    def install(self) -> None:
        for signum in HANDLED:
            signal.signal(signum, self._handle)

    def pop_all(self) -> list[int]:
        pending, self.pending = self.pending, []
        return pending

    def _handle(self, signum: int, frame: object) -> None:
        self.pending.append(signum)
        self.wake()


def restore_defaults() -> None:
    for signum in HANDLED:
        signal.signal(signum, signal.SIG_DFL)
