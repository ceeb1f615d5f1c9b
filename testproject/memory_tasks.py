"""Tasks for the memory tests: what a worker's collector does to the
memory it shares with its supervisor."""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

from robust_queue.compat import task


@task()
def collector_state() -> dict[str, Any]:
    """Whether the collector runs, how many objects it leaves alone
    (frozen), and how much of this process's memory a full collection
    makes private (KiB: pages it copied from the supervisor's)."""
    before = private_kib()
    gc.collect()
    return {
        "enabled": gc.isenabled(),
        "frozen": gc.get_freeze_count(),
        "copied_kib": private_kib() - before,
    }


def private_kib() -> int:
    """This process's private memory (Linux: clean + dirty, KiB)."""
    total = 0
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("Private_Clean", "Private_Dirty"):
            total += int(rest.split()[0])
    return total


@task()
def start_up_modules() -> dict[str, bool]:
    """Whether this worker holds what only the start-up checks need: the
    URLconf (Django's system checks), the migration machinery and the
    queue's migrations (the migration check), the test client, and the
    command's subcommands."""
    from django.conf import settings  # noqa: PLC0415 - read when the task runs

    return {
        "urlconf": settings.ROOT_URLCONF in sys.modules,
        "migration_executor": "django.db.migrations.executor" in sys.modules,
        "migrations": "robust_queue.migrations.0001_initial" in sys.modules,
        "test_client": "django.test.client" in sys.modules,
        "subcommands": "robust_queue.management.commands.robust_queue_status" in sys.modules,
    }
