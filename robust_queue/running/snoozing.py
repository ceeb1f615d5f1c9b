"""Snooze: a task raises ``robust_queue.Snooze(delay)`` to run again later.

The run counts as an attempt (its worker id is kept, ``TaskContext.attempt``
goes up) but not as a failure: no error is appended, the job is not failed,
and retry policies count runs without their snoozes (``Job.retry_attempt``,
from the ``snoozes`` column). The job is scheduled ``delay`` from now by the
database's clock (ready at once for 0), in one transaction fenced by its
claim like any finish; after the commit its concurrency slot is given back
and ``job_snoozed`` is sent.
"""

from __future__ import annotations

import copy
import logging
from datetime import timedelta

from django.db import DatabaseError, models, transaction

from .. import signals
from ..models import BlockedExecution, ClaimedExecution, Job
from ..models.clock import database_now
from ..models.statistics import record_attempt

logger = logging.getLogger(__name__)


def snooze_claim(claimed: ClaimedExecution, delay: timedelta) -> bool:
    """Give ``claimed``'s job back to run ``delay`` from now; False if the
    claim is gone (someone else ended the job).

    A job asked to cancel meanwhile is failed as cancelled instead.
    """
    using = claimed._state.db or "default"
    with transaction.atomic(using=using):
        # The claim's own fence (ClaimedExecution owns it; the dialect
        # rewrite keeps it): exactly one transition removes the claim, and
        # not this one if a cancel request holds it.
        taken = claimed._take_to_run_again(using)
        if taken:
            job = _reschedule(claimed, using, delay)
    if taken is None:
        return claimed.fail_cancelled()
    if not taken:
        return False
    # The attempt as it ran (its due time, not the new one).
    record_attempt(claimed.job, using=using, outcome="snoozed")
    _release_slot(job, using)
    signals.job_snoozed.send(sender=Job, job=job, run_at=job.run_after)
    return True


def _reschedule(claimed: ClaimedExecution, using: str, delay: timedelta) -> Job:
    """Stamp the job and dispatch it, in the transaction that took its
    claim; the job as it is now."""
    job = copy.copy(claimed.job)
    now = database_now(using)
    jobs = Job.objects.using(using).filter(pk=job.pk)
    jobs.update(run_after=now + delay, snoozes=models.F("snoozes") + 1)
    job.run_after = now + delay
    job.snoozes += 1
    Job.objects.using(using).dispatch_all([job], now=now)
    return job


def _release_slot(job: Job, using: str) -> None:
    # After commit, as for a finish: a failure here must not undo the
    # snooze; concurrency maintenance releases what is left blocked.
    try:
        BlockedExecution.objects.using(using).release_slot_of(job)
    except DatabaseError:
        logger.exception("Releasing the concurrency slot of job %s failed", job.pk)
