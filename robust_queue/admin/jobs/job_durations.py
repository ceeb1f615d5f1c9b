"""A job's wait and run time on its page: "Waited" and "Ran for".

Waited: from when the job was due (enqueued, or its ``run_after`` if
later) to its first start; while it has not started, how long it has been
waiting. Ran for: from its first start to its end (retries included);
while it runs, how long its current attempt has run. Rows may be edited
by hand: a missing time, or an end before its start, shows "—".
"""

from __future__ import annotations

import datetime as dt

from ...models import Job, JobState
from .. import display
from .attempts import Attempt

NONE = "—"
WAITING = (JobState.READY, JobState.SCHEDULED, JobState.BLOCKED)


def waited(job: Job, state: JobState | None, now: dt.datetime) -> str:
    due = max(filter(None, (job.enqueued_at, job.run_after)), default=None)
    if due is None:
        return NONE
    if job.started_at is not None:
        return _between(due, job.started_at)
    if state not in WAITING:
        return NONE
    if due > now:
        return f"not due yet (due in {display.duration(due - now)})"
    return f"waiting for {display.duration(now - due)}"


def ran_for(job: Job, state: JobState | None, attempts: list[Attempt], now: dt.datetime) -> str:
    if state == JobState.CLAIMED:
        started = job.last_attempted_at or job.started_at
        running = _between(started, now) if started is not None else NONE
        return NONE if running == NONE else f"running for {running}"
    if job.started_at is None:
        return NONE
    if job.finished_at is not None:
        return _between(job.started_at, job.finished_at)
    if state == JobState.FAILED:
        ends = [attempt.ended for attempt in attempts if attempt.ended is not None]
        return _between(job.started_at, max(ends)) if ends else NONE
    return NONE


def _between(start: dt.datetime, end: dt.datetime) -> str:
    """``end - start``; "—" for an end before its start (a hand-edited
    row)."""
    return display.duration(end - start) if end >= start else NONE
