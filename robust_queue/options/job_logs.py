"""A job's own log: per task (``@job_log`` or ``@task(job_log=True)``) and
project-wide (``ROBUST_QUEUE["job_log"]``).

What a task logs through ``logging`` while one of its jobs runs is kept
with that attempt and shown on the job page (``running/job_logs.py``).
Off by default: a task that does not ask for it costs no handler, no
query and no column written.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from .. import conf, conversions
from ..compat import Task
from .option import Call, Option


@dataclass(frozen=True, slots=True)
class JobLog:
    """Whether a task's jobs keep their log, and from which level."""

    enabled: bool = True
    level: int = logging.NOTSET


def _job_log(*, level: int | str = logging.NOTSET, enabled: bool = True) -> JobLog:
    """Keep what the task logs during each attempt, from ``level`` up (a
    number or a name such as ``"INFO"``; every record that reaches the
    root logger by default), with the attempt; ``enabled=False`` turns a
    project-wide ``ROBUST_QUEUE["job_log"]`` off for this task. Stacked
    over ``@task``."""
    if not isinstance(enabled, bool):
        raise ValueError(f"'enabled' must be True or False, not {enabled!r}.")
    try:
        number = conversions.log_level(level)
    except ValueError as exc:
        raise ValueError(f"'level' {exc}, not {level!r}.") from None
    return JobLog(enabled=enabled, level=number)


def _keyword(value: object) -> object:
    # job_log=True is @job_log(); job_log=False turns it off for the task.
    if value is True:
        return Call()
    if value is False:
        return Call(kwargs={"enabled": False})
    return value


JOB_LOG = Option(
    name="job_log",
    kind=JobLog,
    make=_job_log,
    keyword=_keyword,
    takes="True, False or a dict of job_log() options",
)
job_log = JOB_LOG.decorator()


def level_for(task: Task[..., Any] | None) -> int | None:
    """The lowest level kept of the task's records; None: no job log."""
    own = JOB_LOG.of(task)
    if own is not None:
        return own.level if own.enabled else None
    # Asked for every job a worker runs: the setting is read once.
    return conf.cached(conf.JOB_LOG)
