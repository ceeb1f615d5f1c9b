"""The supervisor's pidfile: an exclusive lock held for its life.

The lock (``flock``), not the pid written in the file, decides who runs:
two supervisors started together cannot both pass a check-then-write, and
a supervisor killed with ``SIGKILL`` leaves no lock behind (the kernel drops
it with the last descriptor). The pid is written for operators and for
``robust_queue health``.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from ..exceptions import PidfileLocked

# How long a refused start waits for the holder to write its pid (it does
# so right after taking the lock) so that the message can name it.
_HOLDER_PID_WAIT = 1.0

# Descriptors holding a lock in this process. A forked child closes its
# copies: otherwise a child that outlives its supervisor would keep the
# lock and refuse the next supervisor.
_held: set[int] = set()


def _close_held_in_child() -> None:
    for fd in _held:
        os.close(fd)
    _held.clear()


os.register_at_fork(after_in_child=_close_held_in_child)


class Pidfile:
    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock and write our pid; raise ``PidfileLocked`` if
        another supervisor holds it."""
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while self._fd is None:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise self._refused() from None
            if self._is_current(fd):
                self._fd = fd
            else:
                # The holder removed the file between our open and our
                # lock: this inode is no longer the pidfile; start over.
                os.close(fd)
        _held.add(self._fd)
        os.ftruncate(self._fd, 0)
        os.write(self._fd, f"{os.getpid()}\n".encode())

    def release(self) -> None:
        """Remove the file and drop the lock (only if we hold it)."""
        if self._fd is None:
            return
        # Unlinked while still locked: a supervisor that opened it
        # meanwhile sees the inode change and opens the new file.
        self.path.unlink(missing_ok=True)
        _held.discard(self._fd)
        os.close(self._fd)
        self._fd = None

    def read(self) -> int | None:
        """The pid written in the file, if any."""
        try:
            return int(self.path.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def _is_current(self, fd: int) -> bool:
        try:
            return os.stat(self.path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            return False

    def _refused(self) -> PidfileLocked:
        deadline = time.monotonic() + _HOLDER_PID_WAIT
        while (holder := self.read()) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        who = f"pid {holder}" if holder else "a pid not yet written"
        return PidfileLocked(
            f"A supervisor is already running with {who}: it holds the lock on {self.path}."
        )


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
