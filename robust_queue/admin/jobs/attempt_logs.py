"""The job page's log of each attempt (``robust_queue.job_log``).

The text was masked when it was captured; it is masked again here with
today's rules (they may have grown since, or the column been edited by
hand). The template escapes it like every value.
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import masking
from ...models import Job
from ...models.attempt_logs import ATTEMPT, TEXT, WORKER_ID, stored_logs


@dataclass(frozen=True, slots=True)
class AttemptLog:
    attempt: str
    worker_id: str
    text: str

    @property
    def lines(self) -> int:
        return len(self.text.splitlines())


def attempt_logs(job: Job) -> list[AttemptLog]:
    """Each attempt's kept log, oldest first; [] if none was kept."""
    entries = stored_logs(job.attempt_logs)
    if not entries:
        return []
    rules = masking.rules()
    return [
        AttemptLog(
            attempt=str(entry.get(ATTEMPT, "?")),
            worker_id=masking.mask(str(entry.get(WORKER_ID) or ""), using=rules),
            text=masking.mask(str(entry.get(TEXT) or ""), using=rules),
        )
        for entry in entries
    ]
