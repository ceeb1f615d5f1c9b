"""Which process holds a SQLite database's one write lock (Linux).

SQLite locks its files with POSIX byte-range locks, which the kernel lists
in ``/proc/locks`` with the holder's pid. The writer holds, in WAL mode,
an exclusive lock on byte 120 of the ``-shm`` file (``WAL_WRITE_LOCK``,
the first of the shared-memory locks); in rollback-journal mode, one on
the database file's RESERVED byte (``PENDING_BYTE + 1``). A process that
stopped inside a write (SIGSTOP, a deadlock, the GIL held in C) keeps
that lock until it ends, and every other writer gets "database is
locked" meanwhile: this names it, so that its supervisor can end it.

Elsewhere than Linux, or for an in-memory database, nobody is named.
"""

from __future__ import annotations

import os
from pathlib import Path

LOCKS = Path("/proc/locks")
WAL_WRITE_LOCK = 120
RESERVED_BYTE = 0x40000000 + 1


def write_lock_holder(database: str, locks: Path = LOCKS) -> int | None:
    """The pid holding ``database``'s write lock, or None if none does or
    it cannot be told."""
    targets = {
        key: offset
        for path, offset in ((f"{database}-shm", WAL_WRITE_LOCK), (database, RESERVED_BYTE))
        if (key := _file_key(path)) is not None
    }
    if not targets:
        return None
    try:
        lines = locks.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        # "1: POSIX  ADVISORY  WRITE 3057 fd:01:1234567 120 120"; a lock
        # waited for is listed as "1: -> POSIX ...": not a holder.
        if len(fields) < 8 or fields[1] == "->" or fields[1] not in ("POSIX", "OFDLCK"):
            continue
        _, _, _, mode, pid, file_key, start, _end = fields[:8]
        if mode != "WRITE" or not pid.isdigit() or not start.isdigit():
            continue
        if targets.get(file_key) == int(start) and int(pid) > 0:
            return int(pid)
    return None


def _file_key(path: str) -> str | None:
    """``/proc/locks``' name of a file: major:minor (hex) and inode."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
