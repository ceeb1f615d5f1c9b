"""The bulk actions on jobs: which jobs each applies to and what it runs.

Both the confirmation page (``bulk.py``) and the job that runs a large
action on the queue (``bulk_task.py``) read this table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import Q, QuerySet

from ...models import ClaimedExecution, Job
from ...operations import bulk


@dataclass(frozen=True)
class Verb:
    name: str
    label: str
    done: str
    applies_to: Q
    run: Callable[..., bulk.Outcome]
    # The field that holds a job's id where the verb's jobs are: on the
    # one table that holds them all, a count reads that table alone
    # (``models/sql/own_table.py``).
    id_field: str = "pk"
    # The few jobs of a selection the verb never applies to, when
    # ``applies_to`` is all the others: a count takes them away instead of
    # testing every job (``counting.capped_count_and_top``).
    less: Q | None = None

    def bounded(self, jobs: QuerySet[Job], top: int) -> QuerySet[Job]:
        """The ``jobs`` this verb applies to whose id is at most ``top``."""
        return jobs.filter(self.applies_to, **{f"{self.id_field}__lte": top})


VERBS = {
    "retry": Verb(
        "retry",
        "Retry",
        "Retried",
        Q(failed_execution__isnull=False),
        bulk.retry,
        id_field="failed_execution__job_id",
    ),
    "run_now": Verb(
        "run_now",
        "Run now",
        "Made ready",
        Q(scheduled_execution__isnull=False) | Q(blocked_execution__isnull=False),
        bulk.run_now,
    ),
    # Not running: outside the claimed table, read once as a set (a join
    # would look up each job in it: 1.7 s for a million jobs on MariaDB,
    # 1.2 s so).
    "discard": Verb(
        "discard",
        "Discard",
        "Discarded",
        ~Q(pk__in=ClaimedExecution.objects.values("job_id")),
        bulk.discard,
        less=Q(claimed_execution__isnull=False),
    ),
    # Running jobs count as changed once asked to stop.
    "cancel": Verb(
        "cancel",
        "Cancel",
        "Cancelled (or asked to stop)",
        Q(finished_at__isnull=True, failed_execution__isnull=True),
        bulk.cancel,
    ),
}
