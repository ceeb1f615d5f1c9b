"""The bulk actions on jobs: which jobs each applies to and what it runs.

Both the confirmation page (``bulk.py``) and the job that runs a large
action on the queue (``bulk_task.py``) read this table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import Q

from ...operations import bulk


@dataclass(frozen=True)
class Verb:
    name: str
    label: str
    done: str
    applies_to: Q
    run: Callable[..., bulk.Outcome]


VERBS = {
    "retry": Verb("retry", "Retry", "Retried", Q(failed_execution__isnull=False), bulk.retry),
    "run_now": Verb(
        "run_now",
        "Run now",
        "Made ready",
        Q(scheduled_execution__isnull=False) | Q(blocked_execution__isnull=False),
        bulk.run_now,
    ),
    "discard": Verb(
        "discard", "Discard", "Discarded", Q(claimed_execution__isnull=True), bulk.discard
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
