"""Tasks renamed or moved since jobs were enqueued under their old paths
(``@aliases``), for the tests of stranded jobs. Imported by those tests
and listed in ``task_modules`` for the supervisors they start."""

from __future__ import annotations

from datetime import timedelta

import robust_queue
from robust_queue.compat import task

from .models import LedgerEntry

# The paths these tasks had before: no module declares them any more.
OLD_RECORD = "testproject.old_tasks.record_entry"
OLD_RECORD_TOO = "testproject.legacy.record"
OLD_FLAKY = "testproject.old_tasks.flaky"


@robust_queue.aliases(OLD_RECORD, OLD_RECORD_TOO)
@task()
def record_entry(key: str) -> str:
    """Renamed from ``testproject.old_tasks.record_entry``; one ledger row a run."""
    LedgerEntry.objects.create(key=key)
    return f"recorded {key}"


@robust_queue.aliases(OLD_FLAKY)
@robust_queue.retry(attempts=2, wait=timedelta(0), jitter=0)
@task()
def flaky(key: str) -> str:
    """Moved: fails its first attempt, so its old jobs are retried with its policy."""
    if not LedgerEntry.objects.filter(key=key).exists():
        LedgerEntry.objects.create(key=key)
        raise RuntimeError("first attempt fails")
    return f"second attempt of {key}"


@task()
def plain(*args: object) -> str:
    """A task without aliases: where stranded jobs are moved in the tests."""
    return "plain " + ",".join(str(arg) for arg in args)
