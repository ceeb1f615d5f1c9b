"""The supervisor's upkeep beyond one process's life (``Process`` owns
that): pruning, failing claims whose process row is gone, and recording
exits while the database does not answer.

One row the code cannot handle (a hand-edited column, a bug) must not stop
the supervisor nor the upkeep of every other row: an error that is not the
database's is logged once per row it concerns (``FaultLog``), that row is
skipped, and the next round tries it again quietly.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from functools import partial

from django.db import DatabaseError, connections

from ..exceptions import ProcessMissingError
from ..models import ClaimedExecution, Process
from ..models.process import OUTCOME_NOT_RECORDED
from ..models.sql import dialect_for

logger = logging.getLogger(__name__)


class FaultLog:
    """Runs upkeep steps; an error that is not the database's is logged
    with its traceback the first time it happens to a row, not again
    until a step for that row has succeeded. Database errors propagate
    (the caller's outage handling owns them)."""

    def __init__(self) -> None:
        self._failing: set[str] = set()

    def run(self, concerns: str, step: Callable[[], int]) -> int:
        """``step()``, or 0 if it raised; ``concerns`` names the row."""
        try:
            done = step()
        except DatabaseError:
            raise
        except Exception:
            if concerns not in self._failing:
                self._failing.add(concerns)
                logger.exception(
                    "%s failed; skipped (tried again in later rounds, logged once)", concerns
                )
            return 0
        self._failing.discard(concerns)
        return done


def prune_processes(using: str, threshold: float, keep: int, faults: FaultLog) -> list[Process]:
    """Prune the processes silent for ``threshold`` s but ``keep``, each
    on its own: one that cannot be pruned does not hold up the others.
    Return those pruned (a supervisor ends its own among them).

    A process pruned part way has lost its row: the claims left are
    orphans, failed one by one by the orphan sweep.
    """
    return Process.objects.using(using).prune(threshold, keep=keep, guard=faults.run)


def fail_orphaned_claims(
    using: str, pks: list[int] | None = None, faults: FaultLog | None = None
) -> int:
    """Fail claims whose process row is gone (e.g. deleted while down)."""
    claims = ClaimedExecution.objects.using(using).orphaned()
    if pks is not None:
        claims = claims.filter(pk__in=pks)
    faults = faults or FaultLog()
    failed = 0
    for claim in claims.select_related("job"):
        # One at a time: each error names the worker that claimed it, and
        # a claim that cannot be failed does not hold up the others.
        failed += faults.run(
            f"Failing claim {claim.pk} of job {claim.job_id}", partial(_fail_orphan, using, claim)
        )
    if failed:
        logger.warning("Failed %d claimed job(s) of missing processes", failed)
    return failed


def _fail_orphan(using: str, claim: ClaimedExecution) -> int:
    one = ClaimedExecution.objects.using(using).filter(pk=claim.pk)
    return one.fail_all_with(ProcessMissingError, missing_process_message(claim))


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
        self.faults = FaultLog()
        self._seen: dict[int, float] = {}

    def run(self) -> int:
        now = time.monotonic()
        orphans = ClaimedExecution.objects.using(self.using).orphaned()
        current = set(orphans.values_list("pk", flat=True))
        self._seen = {pk: self._seen.get(pk, now) for pk in current}
        due = [pk for pk, seen in self._seen.items() if now - seen >= self.settle]
        return fail_orphaned_claims(self.using, due, self.faults) if due else 0

    def fail_all(self) -> int:
        """Fail every orphaned claim now (at boot: no worker of this
        supervisor can still give one back)."""
        return fail_orphaned_claims(self.using, faults=self.faults)


class Backlog:
    """Records of exits that wait for the database; reaping never does.

    ``flush()`` runs them in order and keeps the rest when the database
    does not answer (``on_error``); a record whose rows another session
    holds waits for a later flush without holding up the others
    (``on_locked``, once per wait). Each record can run again after a
    partial failure. A record that fails otherwise (a row the code
    cannot handle) is logged and dropped: the process row it did not
    remove goes stale, and pruning fails what is left.
    """

    def __init__(
        self,
        on_error: Callable[[DatabaseError], None],
        on_locked: Callable[[DatabaseError], None],
        *,
        using: str,
    ) -> None:
        self.using = using
        self.on_error = on_error
        self.on_locked = on_locked
        self.waiting_for_lock = False
        self._records: deque[tuple[Callable[[], object], str]] = deque()

    def __len__(self) -> int:
        return len(self._records)

    def add(self, record: Callable[[], object], concerns: str = "A record") -> None:
        """Queue ``record``; ``concerns`` names it in the log."""
        self._records.append((record, concerns))

    def flush(self) -> bool:
        """Run what is pending; False if some is left for later."""
        locked = False
        for entry in list(self._records):
            record, concerns = entry
            try:
                record()
            except DatabaseError as exc:
                if dialect_for(self.using).lock_conflict(exc) is None:
                    self.on_error(exc)
                    # The session may be broken: start a new one.
                    connections.close_all()
                    return False
                if not (locked or self.waiting_for_lock):
                    self.on_locked(exc)
                locked = True
                continue
            except Exception:
                logger.exception(
                    "%s failed; dropped: the process row it did not remove is "
                    "pruned when stale, and the claims left are failed then",
                    concerns,
                )
            self._records.remove(entry)
        self.waiting_for_lock = locked
        return not self._records
