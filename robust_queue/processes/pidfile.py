"""A pidfile that refuses a second live supervisor and replaces a stale one."""

from __future__ import annotations

import os
from pathlib import Path

from ..exceptions import ConfigurationError


class Pidfile:
    def __init__(self, path: str) -> None:
        self.path = Path(path)

    def acquire(self) -> None:
        other = self.read()
        if other and other != os.getpid() and pid_alive(other):
            raise ConfigurationError(
                f"A supervisor is already running with pid {other} ({self.path})."
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(f"{os.getpid()}\n")

    def release(self) -> None:
        if self.read() == os.getpid():
            self.path.unlink(missing_ok=True)

    def read(self) -> int | None:
        """The pid written in the file, if any."""
        try:
            return int(self.path.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
