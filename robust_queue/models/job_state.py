"""The states of a job, and the execution table that holds each.

A leaf of the models: a transition that works on a job's execution rows
(``cancelling.py``) finds their tables through the job's reverse
one-to-one fields, without importing the execution models.
"""

from __future__ import annotations

from typing import Any

from django.db import models


class JobState(models.TextChoices):
    READY = "ready", "Ready"
    SCHEDULED = "scheduled", "Scheduled"
    CLAIMED = "claimed", "Running"
    BLOCKED = "blocked", "Blocked"
    FAILED = "failed", "Failed"
    FINISHED = "finished", "Finished"


# The reverse one-to-one accessor of each execution table, by state.
EXECUTION_ACCESSORS = {
    JobState.READY: "ready_execution",
    JobState.SCHEDULED: "scheduled_execution",
    JobState.CLAIMED: "claimed_execution",
    JobState.BLOCKED: "blocked_execution",
    JobState.FAILED: "failed_execution",
}
# A job in one of these is not running yet: cancelling ends it at once.
WAITING_STATES = (JobState.READY, JobState.SCHEDULED, JobState.BLOCKED)


def execution_manager(job_model: type[models.Model], state: JobState, using: str) -> Any:
    """The default manager, on ``using``, of the table that holds jobs of
    ``job_model`` in ``state``."""
    model = job_model._meta.get_field(EXECUTION_ACCESSORS[state]).related_model
    assert isinstance(model, type) and issubclass(model, models.Model)
    return model._default_manager.using(using)
