"""Crash recovery: prune silent processes and fail the claims they leave."""

from __future__ import annotations

import logging

from ..exceptions import ProcessExitError, ProcessMissingError, ProcessPrunedError
from ..models import ClaimedExecution, Process

logger = logging.getLogger(__name__)


def prune_dead_processes(using: str, threshold: float, *, keep: int | None = None) -> int:
    """Fail the claims of processes silent for ``threshold`` s; drop their rows."""
    pruned = 0
    stale = Process.objects.using(using).stale(threshold)
    if keep is not None:
        stale = stale.exclude(pk=keep)
    for process in stale:
        claims = ClaimedExecution.objects.using(using).filter(process_id=process.pk)
        failed = claims.fail_all_with(
            ProcessPrunedError,
            f"{process.kind} {process.name} (pid {process.pid} on "
            f"{process.hostname}) stopped heartbeating and was pruned",
        )
        Process.objects.using(using).filter(pk=process.pk).delete()
        logger.warning("Pruned %s; failed %d claimed job(s)", process.name, failed)
        pruned += 1
    return pruned


def fail_orphaned_claims(using: str) -> int:
    """Fail claims whose process row is gone (e.g. deleted while down)."""
    failed = ClaimedExecution.objects.using(using).orphaned().fail_all_with(
        ProcessMissingError, "the process that claimed this job is not registered"
    )
    if failed:
        logger.warning("Failed %d claimed job(s) of missing processes", failed)
    return failed


def fail_exited(using: str, supervisor_id: int, pid: int, reason: str) -> int:
    """A forked child exited: fail its claims with its exit reason."""
    rows = Process.objects.using(using).filter(supervisor_id=supervisor_id, pid=pid)
    return sum(fail_process(using, pk, reason) for pk in rows.values_list("pk", flat=True))


def fail_process(using: str, process_pk: int, reason: str) -> int:
    """Fail the claims of one dead process with ``ProcessExitError``; drop it."""
    process = Process.objects.using(using).filter(pk=process_pk).first()
    if process is None:
        return 0
    claims = ClaimedExecution.objects.using(using).filter(process_id=process_pk)
    failed = claims.fail_all_with(
        ProcessExitError, f"{process.name} (pid {process.pid}) {reason}"
    )
    Process.objects.using(using).filter(pk=process_pk).delete()
    if failed:
        logger.error("%s %s; failed %d claimed job(s)", process.name, reason, failed)
    return failed


def release_exited(using: str, supervisor_id: int, pid: int) -> int:
    """A forked child killed at shutdown: its unfinished jobs go back to ready."""
    rows = Process.objects.using(using).filter(supervisor_id=supervisor_id, pid=pid)
    return sum(release_process(using, pk) for pk in rows.values_list("pk", flat=True))


def release_process(using: str, process_pk: int) -> int:
    claims = ClaimedExecution.objects.using(using).filter(process_id=process_pk)
    released = claims.release_all()
    Process.objects.using(using).filter(pk=process_pk).delete()
    return released
