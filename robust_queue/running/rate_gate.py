"""The start of a rate-limited job: every start counts in the window it
happens in.

A job is counted when it is admitted (``models/rate_limit.py``), and its
``run_after`` records when. A worker that starts it in that same window
does nothing more: the common case costs one read of the database's clock.
A job that starts in a later window (workers were busy, or not running)
counts again, in the window it starts in; if that window is full, or jobs
of its key wait already, it goes back in line — its claim is taken as a
snooze is (the run counts as an attempt, not for retries) — and the
dispatcher releases it in priority order. So starts of a key never exceed
``to`` per window, however late its jobs are claimed.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING

from django.db import DatabaseError, models, transaction

from ..models import Job, RateLimit
from ..models.clock import database_now
from ..models.rate_limit import window
from ..models.statistics import record_attempt
from ..options.rate_limits import Rate, limit_for

if TYPE_CHECKING:
    from ..models import ClaimedExecution

logger = logging.getLogger(__name__)


def may_start(claimed: ClaimedExecution) -> bool:
    """Whether ``claimed``'s job may run now (counted in this window).

    False: it went back in line, its claim was gone, or its cancel was
    requested (it is failed as cancelled); either way this
    worker does not run it. A database error lets it run (logged): a job
    is never stranded in its claim while its worker lives.
    """
    job = claimed.job
    rate = limit_for(job.declared_task()) if job.rate_key else None
    if rate is None:
        return True
    using = claimed._state.db or "default"
    try:
        now = database_now(using)
        if job.run_after is not None and window(rate, job.run_after) == window(rate, now):
            return True
        return _count_again(claimed, rate, using, now)
    except DatabaseError:
        logger.warning(
            "Job %s: its rate limit could not be checked at start; it runs",
            job.result_id,
            exc_info=True,
        )
        return True


def _count_again(claimed: ClaimedExecution, rate: Rate, using: str, now: datetime) -> bool:
    job = claimed.job
    windows = RateLimit.objects.using(using)
    with transaction.atomic(using=using):
        row = windows.lock_window(job.rate_key, rate, now)
        if row.next_release is None and row.count < rate.to:
            row.count += 1
            row.save(update_fields=["count", "window_start", "window_end", "updated_at"])
            return True
        # The claim's own fence (ClaimedExecution owns it): exactly one
        # transition removes the claim, and not this one if a cancel
        # request holds it.
        taken = claimed._take_to_run_again(using)
        if taken:
            Job.objects.using(using).filter(pk=job.pk).update(snoozes=models.F("snoozes") + 1)
            windows.wait_in_line([job], job.rate_key, row, rate, now)
            row.save()
    if taken is None:
        claimed.fail_cancelled()
    if not taken:
        return False
    logger.info("Job %s started after its rate limit window; it waits for a new one", job.result_id)
    record_attempt(job, using=using, outcome="snoozed")
    return False
