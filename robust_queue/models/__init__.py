"""Robust Queue's models; one per module, re-exported here."""

from .blocked_execution import BlockedExecution
from .claimed_execution import ClaimedExecution
from .failed_execution import FailedExecution
from .job import Job, JobState
from .pause import Pause
from .process import Process, ProcessKind
from .queue import Queue
from .ready_execution import ReadyExecution
from .recurring_execution import RecurringExecution
from .recurring_task import RecurringTask
from .scheduled_execution import ScheduledExecution
from .semaphore import Semaphore

__all__ = [
    "BlockedExecution",
    "ClaimedExecution",
    "FailedExecution",
    "Job",
    "JobState",
    "Pause",
    "Process",
    "ProcessKind",
    "Queue",
    "ReadyExecution",
    "RecurringExecution",
    "RecurringTask",
    "ScheduledExecution",
    "Semaphore",
]
