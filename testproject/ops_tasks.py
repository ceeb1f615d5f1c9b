"""Tasks for the operations tests: a leak, for worker recycling."""

from __future__ import annotations

import os

from robust_queue.compat import task

# What leak() keeps alive for the life of its process.
_KEPT: list[bytearray] = []


@task()
def leak(mib: int) -> int:
    """Keep ``mib`` MiB (touched, so resident) until the process ends."""
    _KEPT.append(bytearray(b"x" * (mib * 1024 * 1024)))
    return os.getpid()


@task()
def pid() -> int:
    return os.getpid()
