"""Each attempt of a job: worker, host, start, end and outcome.

A failed attempt's error record names its attempt, worker, start and end
(``attempt_history``). The job row adds the first start (``started_at``),
the last start (``last_attempted_at``) and how the last attempt ended.
An attempt with no error of its own was released or lost (its process
stopped or was pruned): when it ran is not recorded, and says so. Error
records written before the attempt fields existed are matched to
attempts by position, as they were then.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, replace
from typing import Any

from ...models import Job, JobState, Process, attempt_history
from ...models.execution import Execution
from .. import display

NOT_RECORDED = "not recorded"
NOT_AN_ATTEMPT = "no attempt (the job was waiting)"
# A process name: kind-host-pid-random (processes/registration.py).
_PROCESS_NAME = re.compile(r"[a-z]+-(?P<host>.+)-(?P<pid>\d+)-[a-z0-9]{6}")


@dataclass(frozen=True, slots=True)
class Attempt:
    number: int
    worker_id: str
    process: Process | None
    host: str
    started: dt.datetime | None
    ended: dt.datetime | None
    outcome: str
    exception_class: str

    @property
    def duration(self) -> str:
        return display.span(self.started, self.ended) if self.ended else "—"


def attempts_of(job: Job, errors: list[dict[str, Any]], state: JobState | None) -> list[Attempt]:
    """Every attempt of ``job``, oldest first (``errors``: its error
    records as shown, see ``display.error_records``)."""
    worker_ids = display.worker_ids(job)
    processes = _processes(job, worker_ids)
    by_number = errors_by_attempt(errors, len(worker_ids))
    attempts = [
        _attempt(
            job,
            state,
            number,
            worker_id,
            by_number.get(number),
            len(worker_ids),
            processes.get(worker_id),
        )
        for number, worker_id in enumerate(worker_ids, start=1)
    ]
    last = by_number.get(len(worker_ids))
    if last is not None and errors and errors[-1] is not last:
        # A failure after the last attempt ended it (cancelled while waiting
        # for its retry): that attempt just failed.
        attempts[-1] = replace(attempts[-1], outcome="failed")
    return attempts


def errors_by_attempt(errors: list[dict[str, Any]], count: int) -> dict[int, dict[str, Any]]:
    """The error of each attempt that failed: by the number each record
    names, or (older rows, none named) by position. A record naming
    attempt 0 ended none (cancelled while waiting): it is named, too."""
    named = {
        number: e
        for e in errors
        if (number := attempt_history.attempt_of(e)) is not None and number <= count
    }
    if any(error.get("names_attempt") for error in errors):
        return named
    return {number: error for number, error in enumerate(errors[:count], start=1)}


def labelled_errors(errors: list[dict[str, Any]], worker_ids: list[str]) -> list[dict[str, Any]]:
    """``errors`` with the attempt each ended ("attempt") and its worker."""
    by_number = errors_by_attempt(errors, len(worker_ids))
    numbers = {id(error): number for number, error in by_number.items()}
    labelled = []
    for error in errors:
        number = numbers.get(id(error))
        worker = error.get("worker_id") or (worker_ids[number - 1] if number else "")
        label = f"Attempt {number}" if number else NOT_AN_ATTEMPT.capitalize()
        labelled.append({**error, "label": label, "worker_id": worker})
    return labelled


def host_of(worker_id: str, process: Process | None) -> str:
    """The host of a worker: its process row's, else read from its name."""
    if process is not None:
        return f"{display.text(process.hostname)} (pid {process.pid})"
    match = _PROCESS_NAME.fullmatch(worker_id)
    return f"{match['host']} (pid {match['pid']})" if match else ""


def _attempt(
    job: Job,
    state: JobState | None,
    number: int,
    worker_id: str,
    error: dict[str, Any] | None,
    count: int,
    process: Process | None,
) -> Attempt:
    is_last = number == count
    started = error.get("started_at") if error else None
    ended = error.get("ended_at") if error else None
    if started is None:
        started = _started(job, number, count)
    if ended is None and is_last:
        ended = _last_end(job, state, error is not None)
    return Attempt(
        number=number,
        worker_id=worker_id,
        process=process,
        host=host_of(worker_id, process),
        started=started,
        ended=ended,
        outcome=_outcome(is_last, state, error is not None),
        exception_class=str(error.get("exception_class", "")) if error else "",
    )


def _processes(job: Job, worker_ids: list[str]) -> dict[str, Process]:
    # Worker ids are process names; a pruned process has no row left.
    rows = Process.objects.using(job._state.db).filter(name__in=set(worker_ids))
    return {process.name: process for process in rows.order_by("pk")[:100]}


def _started(job: Job, number: int, count: int) -> dt.datetime | None:
    if number == count:
        return job.last_attempted_at or (job.started_at if number == 1 else None)
    return job.started_at if number == 1 else None


def _last_end(job: Job, state: JobState | None, failed: bool) -> dt.datetime | None:
    if state == JobState.FINISHED:
        return job.finished_at
    if state == JobState.FAILED and failed:
        return _created(job, "failed_execution")
    if state in (JobState.READY, JobState.SCHEDULED) and failed:
        # A retry's execution row is written when the attempt failed.
        return _created(job, "ready_execution") or _created(job, "scheduled_execution")
    return None


def _created(job: Job, accessor: str) -> dt.datetime | None:
    # A reverse one-to-one accessor: the execution row, if the job has one.
    execution: Execution | None = getattr(job, accessor, None)
    return execution.created_at if execution is not None else None


def _outcome(is_last: bool, state: JobState | None, failed: bool) -> str:
    if not is_last:
        return "failed" if failed else "ended (released or lost)"
    if state == JobState.FINISHED:
        return "succeeded"
    if state == JobState.CLAIMED:
        return "running"
    if failed:
        return "failed, no retry left" if state == JobState.FAILED else "failed, retry pending"
    if state == JobState.FAILED:
        return "ended (released or lost)"
    return "released back to the queue"
