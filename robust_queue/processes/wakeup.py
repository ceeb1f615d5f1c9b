"""An interruptible sleep: a self-pipe that signal handlers and threads poke."""

from __future__ import annotations

import os
import select


class Wakeup:
    """``wait(timeout)`` returns early when ``wake()`` is called.

    ``wake()`` only writes a byte to a pipe, so it is safe from a signal
    handler and from any thread.
    """

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds; True if woken."""
        ready, _, _ = select.select([self._read], [], [], max(timeout, 0))
        self._drain()
        return bool(ready)

    def wake(self) -> None:
        try:
            os.write(self._write, b"!")
        except (BlockingIOError, OSError):
            pass  # the pipe is full (already woken) or closed

    def close(self) -> None:
        for fd in (self._read, self._write):
            try:
                os.close(fd)
            except OSError:
                pass

    def _drain(self) -> None:
        try:
            while os.read(self._read, 512):
                pass
        except (BlockingIOError, OSError):
            pass
