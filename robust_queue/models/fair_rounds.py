"""Fair rounds: the place of a grouped job among its queue's ready jobs.

Workers take ready jobs by priority, then round, then job id
(``sql/statements.CLAIM_ORDER``). A job without a fair group stands in
round 0, as every job did before groups existed. A grouped job is given,
as its ready row is inserted, the round after its group's last ready job
at its priority in its queue, and never one before the queue's current
first round there:

    round = max(1 + MAX(round of the group's ready jobs), MIN(round of the queue's))

Both are one read of an index's edge (``rq_ready_group_round``,
``rq_ready_poll_queue``). A group with 1,000 jobs waiting holds rounds
r..r+999; another group's new job gets round r and is taken next: round
robin between the groups that have jobs waiting, whatever their backlog.
No counter, no lock: two enqueues of one group at once may share a round,
and the job id orders them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.db.models import Max, Min

if TYPE_CHECKING:
    from .job import Job


def rounds_of(ready: Any, jobs: Sequence[Job]) -> dict[int, int]:
    """The round of each grouped job of ``jobs`` (by ``id()``) made ready
    now; ``ready`` is the ready rows' manager on the queue's database."""
    rounds: dict[int, int] = {}
    # The next round of each (queue, priority, group), and each (queue,
    # priority)'s first, as this call hands rounds out.
    nexts: dict[tuple[str, int, str], int] = {}
    firsts: dict[tuple[str, int], int] = {}
    for job in jobs:
        if job.group_key is None:
            continue
        line = (job.queue_name, job.priority)
        if line not in firsts:
            found = ready.filter(queue_name=job.queue_name, priority=job.priority)
            firsts[line] = found.aggregate(first=Min("fair_round"))["first"] or 0
        key = (*line, job.group_key)
        if key not in nexts:
            found = ready.filter(
                queue_name=job.queue_name, priority=job.priority, group_key=job.group_key
            )
            last = found.aggregate(last=Max("fair_round"))["last"]
            nexts[key] = 0 if last is None else last + 1
        rounds[id(job)] = max(nexts[key], firsts[line])
        nexts[key] = rounds[id(job)] + 1
    return rounds
