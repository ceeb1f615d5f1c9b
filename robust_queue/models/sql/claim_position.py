"""Where a worker's last claim ended, so that its next one starts there.

Every claimed job leaves a dead entry at the head of the ready index
(``priority DESC, job_id``). Vacuum (InnoDB: purge) removes them, but not
while any transaction on the server may still see their rows: a report or
a forgotten session left open for minutes, and every claim that scans from
the head of the index steps over every job claimed since it began (BENCHMARKS.md,
"Soak", long transactions). A worker's claim therefore starts after the
(priority, job_id) it last claimed, where nothing dead of its own lies
before the live rows:

- jobs of a higher priority than that position are read first, by their
  own range, so a higher priority is always claimed first; then those
  past the position, then the lower priorities, each range of its own;
- a job of the same priority with an older id (a retry, a scheduled job
  come due, a released blocked job, an enqueue that committed late) sits
  before the position; it is found by a scan from the head of the index,
  which a claim makes when it has no position, when the last one was
  ``RESCAN_EVERY`` ago or more, and when the bounded claim finds nothing
  right after a claim that found something. Such a job waits at most
  ``RESCAN_EVERY`` longer than it would have.

Positions are per connection (one worker thread each) and per claim
filter; only the workers ask for them (``resume=True``), and only where the
dialect ``resumes_claims``: PostgreSQL and MySQL/MariaDB. SQLite frees
index entries at once. InnoDB walks delete-marked entries before it checks
a range's end, even for a range with nothing in it, so on MySQL/MariaDB
the higher-priority range (at the head of the index) would walk them all
as the head does; there the claim first reads that range backward, from
its end, for one row (``MySQLDialect.claim_reads``), and its one locking
read includes that range only if this found one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

Statement = tuple[str, list[Any]]


class ClaimedRows(Protocol):
    """What a claim took (``base.ClaimedRows``): job rows in claim order."""

    @property
    def columns(self) -> list[str]: ...

    @property
    def rows(self) -> list[tuple[int, tuple[Any, ...]]]: ...


# Seconds between two scans of the ready index from its head.
RESCAN_EVERY = 1.0

# (priority, job id) of the last job a claim took.
Position = tuple[int, int]


@dataclass(slots=True)
class _Mark:
    position: Position | None = None
    # time.monotonic() of the last scan from the head of the index.
    scanned_at: float = float("-inf")
    # Whether the last claim took any job.
    found: bool = False


class ClaimPositions:
    """The positions of one connection's claims, by claim filter: a claim
    asks ``start`` where to begin, ``rescan`` whether to scan again from
    the head when it found nothing, and tells ``record`` what it took."""

    def __init__(self) -> None:
        self._marks: dict[tuple[Any, ...], _Mark] = {}

    def forget(self) -> None:
        """Forget every position: the next claims scan from the head."""
        self._marks.clear()

    def start(self, queue: Statement) -> Position | None:
        """Where a claim of ``queue`` begins; None: at the head of the index."""
        mark = self._marks.get(_key(queue))
        if mark is None or time.monotonic() - mark.scanned_at >= RESCAN_EVERY:
            return None
        return mark.position

    def rescan(self, queue: Statement, after: Position | None) -> bool:
        """Whether a claim that began ``after`` and took nothing scans
        again from the head: only right after a claim that took jobs."""
        mark = self._marks.get(_key(queue))
        return after is not None and mark is not None and mark.found

    def record(self, queue: Statement, after: Position | None, claimed: ClaimedRows) -> None:
        """What a claim that began ``after`` took (``claimed``)."""
        key = _key(queue)
        mark = self._marks.get(key)
        if mark is None:
            mark = self._marks[key] = _Mark()
        if after is None:
            mark.scanned_at = time.monotonic()
        if claimed.rows:
            mark.position = last_position(claimed.columns, [row for _, row in claimed.rows])
        mark.found = bool(claimed.rows)


def _key(queue: Statement) -> tuple[Any, ...]:
    where, params = queue
    return (where, *params)


def last_position(columns: list[str], rows: list[tuple[Any, ...]]) -> Position | None:
    """The (priority, job id) of the last of ``rows`` (job rows in claim
    order); None if there are none, or if the last job is in a fair group
    (its round is not in its row: the next claim scans from the head)."""
    if not rows:
        return None
    row = rows[-1]
    if "group_key" in columns and row[columns.index("group_key")] is not None:
        return None
    return int(row[columns.index("priority")]), int(row[columns.index("id")])


def bounded(where: str, params: list[Any], after: Position, same: str) -> list[Statement]:
    """The ranges of a claim resumed ``after`` a position, in claim order,
    each a WHERE clause that extends ``where``: the higher priorities, the
    same priority past the position in round 0 (``same``, the dialect's
    spelling of it, takes the priority and the job id), the lower ones."""
    priority, job_id = after
    return [
        (f"{where} AND priority > %s", [*params, priority]),
        (f"{where} AND {same}", [*params, priority, job_id]),
        (f"{where} AND priority < %s", [*params, priority]),
    ]


def bounded_params(params: list[Any], after: Position, limit: int) -> list[Any]:
    """The parameters of ``bounded``'s ranges, each read of up to
    ``limit`` rows, and of the ``limit`` over them all."""
    priority, job_id = after
    return [
        *params,
        priority,
        limit,
        *params,
        priority,
        job_id,
        limit,
        *params,
        priority,
        limit,
        limit,
    ]


# The rest of the claim order past (priority, round 0, job id), spelt so
# that a range optimizer without row comparisons reads it as index ranges.
SAME_PRIORITY_AFTER = "priority = %s AND (fair_round > 0 OR (fair_round = 0 AND job_id > %s))"
