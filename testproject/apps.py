"""The test project's app, with a fault hook for the process tests.

``ROBUST_QUEUE_TEST_FAULT_JOBS`` (comma-separated result ids) makes
``ClaimedExecution.fail`` raise ``RuntimeError`` for those jobs in this
process and its children: a real supervisor meets a claim its code cannot
fail (a bug, not a database error) without any row being edited into a
shape the code handles.

``ROBUST_QUEUE_TEST_STACKS`` (any value) makes ``SIGUSR2`` print every
thread's Python stack to stderr (``faulthandler``), in this process and
the children it forks: a process test that timed out shows where each
process of its supervisor was.

``ROBUST_QUEUE_TEST_LOST_CLAIM_ANSWERS`` (a count) makes that many claims
that took jobs in each process raise ``OperationalError`` after they
committed: the answer lost as a server restarts mid-commit, which no test
can time by stopping a real server.

Test-only: nothing in robust_queue reads them.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import threading
from typing import Any

from django.apps import AppConfig

FAULT_JOBS = "ROBUST_QUEUE_TEST_FAULT_JOBS"
LOST_CLAIM_ANSWERS = "ROBUST_QUEUE_TEST_LOST_CLAIM_ANSWERS"
STACKS = "ROBUST_QUEUE_TEST_STACKS"


class TestProjectConfig(AppConfig):
    name = "testproject"

    def ready(self) -> None:
        if os.environ.get(STACKS):
            faulthandler.register(signal.SIGUSR2, all_threads=True)
        result_ids = {i for i in os.environ.get(FAULT_JOBS, "").split(",") if i}
        if result_ids:
            _refuse_to_fail(result_ids)
        lost = int(os.environ.get(LOST_CLAIM_ANSWERS, "0"))
        if lost:
            lose_claim_answers(lost)


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


def lose_claim_answers(count: int) -> None:
    """The next ``count`` claims that take jobs (in this process) commit,
    then raise as if the connection had dropped before their answer came."""
    from django.db import OperationalError  # noqa: PLC0415 - as above

    from robust_queue.models.sql import DIALECTS, Dialect  # noqa: PLC0415

    left = [count]
    lock = threading.Lock()

    def losing(real: Any) -> Any:
        def claim(self: Dialect, *args: Any, **kwargs: Any) -> Any:
            claimed = real(self, *args, **kwargs)
            with lock:
                lose = bool(claimed.rows) and left[0] > 0
                left[0] -= lose
            if lose:
                raise OperationalError(
                    f"test fault ({LOST_CLAIM_ANSWERS}): the claim committed; its answer is lost"
                )
            return claimed

        return claim

    for kind in {Dialect, *DIALECTS.values()}:
        if "claim" in vars(kind):
            kind.claim = losing(vars(kind)["claim"])  # type: ignore[method-assign]
