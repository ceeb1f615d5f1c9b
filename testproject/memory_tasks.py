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


@task()
def run_queries(count: int) -> int:
    """Run ``count`` trivial queries on this thread's connection."""
    from django.db import connection  # noqa: PLC0415 - read when the task runs

    with connection.cursor() as cursor:
        for _ in range(count):
            cursor.execute("SELECT 1")
    return count


@task()
def queries_held() -> dict[str, int]:
    """How many queries Django's DEBUG log holds: on this job's thread's
    connection as the job starts, and on every connection of the process."""
    from django.db import connection  # noqa: PLC0415 - read when the task runs
    from django.db.backends.base.base import BaseDatabaseWrapper  # noqa: PLC0415

    own = len(connection.queries_log)
    wrappers = [o for o in gc.get_objects() if isinstance(o, BaseDatabaseWrapper)]
    return {"own": own, "process": sum(len(w.queries_log) for w in wrappers)}
