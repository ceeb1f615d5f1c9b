"""The test project's app, with a fault hook for the process tests.

``ROBUST_QUEUE_TEST_FAULT_JOBS`` (comma-separated result ids) makes
``ClaimedExecution.fail`` raise ``RuntimeError`` for those jobs in this
process and its children: a real supervisor meets a claim its code cannot
fail (a bug, not a database error) without any row being edited into a
shape the code handles. Test-only: nothing in robust_queue reads it.
"""

from __future__ import annotations

import os
from typing import Any

from django.apps import AppConfig

FAULT_JOBS = "ROBUST_QUEUE_TEST_FAULT_JOBS"


class TestProjectConfig(AppConfig):
    name = "testproject"

    def ready(self) -> None:
        result_ids = {i for i in os.environ.get(FAULT_JOBS, "").split(",") if i}
        if result_ids:
            _refuse_to_fail(result_ids)


def _refuse_to_fail(result_ids: set[str]) -> None:
    from robust_queue.models import ClaimedExecution  # noqa: PLC0415 - the app registry must be ready

    real_fail = ClaimedExecution.fail

    def fail(self: ClaimedExecution, *args: Any, **kwargs: Any) -> bool:
        if self.job.result_id in result_ids:
            raise RuntimeError(
                f"test fault ({FAULT_JOBS}): the claim of job {self.job.result_id} cannot be failed"
            )
        return real_fail(self, *args, **kwargs)

    ClaimedExecution.fail = fail  # type: ignore[method-assign]
