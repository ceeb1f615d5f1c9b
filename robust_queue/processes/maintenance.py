"""The supervisor's upkeep beyond one process's life (``Process`` owns
that): failing claims whose process row is gone, and recording exits while
the database does not answer.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable

from django.db import DatabaseError, connections

from ..deadlocks import lock_conflict
from ..exceptions import ProcessMissingError
from ..models import ClaimedExecution
from ..models.process import OUTCOME_NOT_RECORDED

logger = logging.getLogger(__name__)


def fail_orphaned_claims(using: str, pks: list[int] | None = None) -> int:
    """Fail claims whose process row is gone (e.g. deleted while down)."""
    claims = ClaimedExecution.objects.using(using).orphaned()
    if pks is not None:
        claims = claims.filter(pk__in=pks)
    failed = 0
    for claim in claims.select_related("job"):
        # One at a time: each error names the worker that claimed it.
        one = ClaimedExecution.objects.using(using).filter(pk=claim.pk)
        failed += one.fail_all_with(ProcessMissingError, missing_process_message(claim))
    if failed:
        logger.warning("Failed %d claimed job(s) of missing processes", failed)
    return failed


def missing_process_message(claim: ClaimedExecution) -> str:
    """Why a claim without a process row fails: who claimed it, and that
    its body may have run."""
    ids = claim.job.worker_ids
    # The column may hold anything (hand-edited): name only a real id.
    last = ids[-1] if isinstance(ids, list) and ids else None
    who = f" ({last})" if isinstance(last, str) else ""
    return (
        f"The process that claimed this job{who} is gone: it is no longer "
        f"registered and never recorded the job's outcome. {OUTCOME_NOT_RECORDED}"
    )


class OrphanSweep:
    """Fails claims that stay without a process row for ``settle`` s.

    A worker pruned while alive may claim a few more jobs before its
    heartbeat tells it, then gives them back as it stops; whatever it has
    not given back after ``settle`` seconds is failed here. The clock is
    this process's own: no comparison with times written by other hosts.
    """

    def __init__(self, using: str, settle: float) -> None:
        self.using = using
        self.settle = settle
        self._seen: dict[int, float] = {}

    def run(self) -> int:
        now = time.monotonic()
        orphans = ClaimedExecution.objects.using(self.using).orphaned()
        current = set(orphans.values_list("pk", flat=True))
        self._seen = {pk: self._seen.get(pk, now) for pk in current}
        due = [pk for pk, seen in self._seen.items() if now - seen >= self.settle]
        return fail_orphaned_claims(self.using, due) if due else 0


class Backlog:
    """Records of exits that wait for the database; reaping never does.

    ``flush()`` runs them in order and keeps the rest when the database
    does not answer (``on_error``); a record whose rows another session
    holds waits for a later flush without holding up the others
    (``on_locked``, once per wait). Each record can run again after a
    partial failure.
    """

    def __init__(
        self,
        on_error: Callable[[DatabaseError], None],
        on_locked: Callable[[DatabaseError], None],
    ) -> None:
        self.on_error = on_error
        self.on_locked = on_locked
        self.waiting_for_lock = False
        self._records: deque[Callable[[], object]] = deque()

    def __len__(self) -> int:
        return len(self._records)

    def add(self, record: Callable[[], object]) -> None:
        self._records.append(record)

    def flush(self) -> bool:
        """Run what is pending; False if some is left for later."""
        locked = False
        for record in list(self._records):
            try:
                record()
            except DatabaseError as exc:
                if lock_conflict(exc) is None:
                    self.on_error(exc)
                    # The session may be broken: start a new one.
                    connections.close_all()
                    return False
                if not (locked or self.waiting_for_lock):
                    self.on_locked(exc)
                locked = True
                continue
            self._records.remove(record)
        self.waiting_for_lock = locked
        return not self._records
