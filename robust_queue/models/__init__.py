"""Robust Queue's models; one per module, re-exported here."""

from .batch import Batch, BatchMember
from .blocked_execution import BlockedExecution
from .claimed_execution import ClaimedExecution, NextClaim
from .failed_execution import FailedExecution
from .job import Job
from .job_dependency import JobDependency
from .job_state import JobState
from .job_tag import JobTag
from .pause import Pause
from .process import Process, ProcessCommand, ProcessKind
from .queue import Queue
from .queue_action import QueueAction
from .queue_cap import QueueCap
from .rate_limit import RateLimit
from .ready_execution import ReadyExecution
from .recurring_execution import RecurringExecution
from .recurring_task import RecurringTask
from .scheduled_execution import ScheduledExecution
from .semaphore import Semaphore
from .statistic import Statistic
from .task_pause import TaskPause
from .unique_key import UniqueKey

__all__ = [
    "Batch",
    "BatchMember",
    "BlockedExecution",
    "ClaimedExecution",
    "FailedExecution",
    "Job",
    "JobDependency",
    "JobState",
    "JobTag",
    "NextClaim",
    "Pause",
    "Process",
    "ProcessCommand",
    "ProcessKind",
    "Queue",
    "QueueAction",
    "QueueCap",
    "RateLimit",
    "ReadyExecution",
    "RecurringExecution",
    "RecurringTask",
    "ScheduledExecution",
    "Semaphore",
    "Statistic",
    "TaskPause",
    "UniqueKey",
]
