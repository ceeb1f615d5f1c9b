"""Every exception Robust Queue raises or records."""

from __future__ import annotations

import math
from datetime import timedelta

from django.db import DatabaseError

# The longest a task may snooze: a year.
MAX_SNOOZE = timedelta(days=365)


class RobustQueueError(Exception):
    """Base class for Robust Queue's own errors."""


class EnqueueError(RobustQueueError):
    """A task could not be enqueued; nothing was written."""


class QueueNotMigratedError(EnqueueError, DatabaseError):
    """The queue's tables are missing or out of date: run ``manage.py migrate``."""


class BatchError(EnqueueError):
    """A batch's options are invalid, or a job cannot join it; nothing was written."""


class DependencyError(EnqueueError):
    """A job's parents are unknown, of another backend or database, or failed."""


class DependencyFailedError(RobustQueueError):
    """A job's parent failed for good, was cancelled or was discarded: it never ran."""


class DiscardedOnConflictError(RobustQueueError):
    """A concurrency limit with on_conflict="discard" dropped the job at enqueue."""


class PayloadTooLargeError(EnqueueError):
    """The encoded arguments are larger than the configured limit."""


class InvalidQueueNameError(RobustQueueError, ValueError):
    """A queue name outside the allowed alphabet or length."""


class InvalidTaskPathError(RobustQueueError, ValueError):
    """A task path that no job can carry was given to pause or resume."""


class UnknownTaskError(RobustQueueError):
    """A job's task path does not name an allowed task of this backend."""


class UndiscardableError(RobustQueueError):
    """The job is running and cannot be discarded."""


class ConfigurationError(RobustQueueError):
    """The Robust Queue configuration is invalid."""


class PidfileLocked(ConfigurationError):
    """Another live supervisor holds the pidfile's lock."""


class ScheduleError(ConfigurationError, ValueError):
    """A runtime schedule is invalid, unknown or declared in code; nothing was written."""


class RetryPolicyError(ConfigurationError):
    """A retry policy cannot say when to retry: its backoff raised or returned a bad delay."""


class TasksFrameworkMissingError(ConfigurationError, ImportError):
    """Django has no django.tasks and the django-tasks backport is missing."""


class ProcessExitError(RobustQueueError):
    """The process running the job exited before finishing it."""


class ProcessPrunedError(RobustQueueError):
    """The process running the job stopped heartbeating and was pruned."""


class ProcessMissingError(RobustQueueError):
    """The process that claimed the job is no longer registered."""


class ReturnValueError(RobustQueueError):
    """The task returned a value that cannot be stored as JSON."""


class DeserializationError(RobustQueueError):
    """A job's stored arguments (or another column) cannot be rebuilt (malformed, or a model row is gone)."""


class EncryptionError(ConfigurationError):
    """An @encrypted task's arguments or return value cannot be encrypted or decrypted here."""


class FinalizeError(RobustQueueError):
    """The database refused a job's outcome; this failure was recorded instead."""


class TaskTimeoutError(RobustQueueError):
    """The job ran past its time limit and was stopped."""


class JobCancelledError(RobustQueueError):
    """The job was cancelled; it is not retried."""


class NotCancellableError(RobustQueueError):
    """The job has already finished (or failed) and cannot be cancelled."""


class NotReschedulableError(RobustQueueError):
    """The job is not scheduled or failed (it is ready, running or finished)."""


class NotEditableError(RobustQueueError):
    """The job is running or has ended, or the edit would change a key its arguments make."""


class StepError(RobustQueueError):
    """A task's steps are misused: a name run twice, a step inside a step, a checkpoint outside one."""


class Snooze(RobustQueueError):
    """Raised by a task to run again after ``delay``, without counting a failure."""

    def __init__(self, delay: float | timedelta = 0) -> None:
        self.delay = _snooze_delay(delay)
        super().__init__(self.delay)

    def __str__(self) -> str:
        return f"snoozed for {self.delay}"


def _snooze_delay(delay: object) -> timedelta:
    """``delay`` (seconds or a timedelta) as a timedelta from 0 to
    ``MAX_SNOOZE``; a ``TypeError`` or ``ValueError`` naming the problem."""
    if isinstance(delay, timedelta):
        seconds = delay.total_seconds()
    elif isinstance(delay, (int, float)) and not isinstance(delay, bool):
        seconds = float(delay)
    else:
        raise TypeError(f"Snooze() takes seconds or a timedelta, not {delay!r}.")
    if not (math.isfinite(seconds) and 0 <= seconds <= MAX_SNOOZE.total_seconds()):
        raise ValueError(f"Snooze() takes a delay from 0 to {MAX_SNOOZE.days} days, not {delay!r}.")
    return timedelta(seconds=seconds)
