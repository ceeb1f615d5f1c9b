"""Every exception Robust Queue raises or records."""

from __future__ import annotations


class RobustQueueError(Exception):
    """Base class for Robust Queue's own errors."""


class EnqueueError(RobustQueueError):
    """A task could not be enqueued; nothing was written."""


class PayloadTooLargeError(EnqueueError):
    """The encoded arguments are larger than the configured limit."""


class UnknownTaskError(RobustQueueError):
    """A job's task path does not name an allowed task of this backend."""


class UndiscardableError(RobustQueueError):
    """The job is running and cannot be discarded."""


class NotFailedError(RobustQueueError):
    """The job has no failed execution to retry."""


class ConfigurationError(RobustQueueError):
    """The Robust Queue configuration is invalid."""


class ProcessExitError(RobustQueueError):
    """The process running the job exited before finishing it."""


class ProcessPrunedError(RobustQueueError):
    """The process running the job stopped heartbeating and was pruned."""


class ProcessMissingError(RobustQueueError):
    """The process that claimed the job is no longer registered."""


class ReturnValueError(RobustQueueError):
    """The task returned a value that cannot be stored as JSON."""
