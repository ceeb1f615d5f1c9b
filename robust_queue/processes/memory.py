"""The resident memory (RSS) of this process, for worker recycling."""

from __future__ import annotations

import os
import resource
import sys

MIB = 1024 * 1024


def rss_mib() -> float:
    """This process's current RSS in MiB.

    Linux: ``/proc/self/statm`` (current). Elsewhere the peak RSS, which
    only grows: a worker recycled by it is recycled no later than by the
    current value.
    """
    try:
        with open("/proc/self/statm", "rb") as statm:
            pages = int(statm.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / MIB
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        # ru_maxrss is in bytes on macOS, KiB elsewhere.
        return peak / MIB if sys.platform == "darwin" else peak / 1024
