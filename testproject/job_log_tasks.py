"""Tasks that log, for the job log tests (``robust_queue.job_log``)."""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta

from robust_queue import retry, time_limit
from robust_queue.compat import task
from robust_queue.options.job_logs import job_log

logger = logging.getLogger("testproject.job_log_tasks")
# What a job log keeps is what logging lets through: INFO for this logger
# (the root logger's level is WARNING).
logger.setLevel(logging.INFO)
# Two jobs that must run at once (the thread test) meet here.
MEET = threading.Barrier(2, timeout=10)


@job_log()
@task()
def chatty(secret: str) -> int:
    """Log a few lines at INFO and WARNING, one of them with a secret."""
    logger.info("starting with %s items", 3)
    logger.warning("calling the API with token=%s", secret)
    logger.info("done")
    return 3


@task()
def quiet() -> int:
    """Logs a line, but keeps no job log (unless the project says so)."""
    logger.warning("nobody keeps this")
    return 1


@job_log(level="WARNING")
@task()
def warnings_only() -> None:
    logger.info("below the level")
    logger.warning("at the level")


@job_log()
@retry(attempts=2, backoff="fixed", wait=timedelta(0))
@task()
def fails_once_then_succeeds(marker: str) -> str:
    """Attempt 1 logs and raises; attempt 2 logs and returns."""
    if not _seen(marker):
        logger.warning("first try for %s", marker)
        try:
            raise KeyError(marker)
        except KeyError:
            logger.exception("lookup failed")
            raise
    logger.warning("second try for %s", marker)
    return marker


_SEEN: set[str] = set()


def _seen(marker: str) -> bool:
    seen = marker in _SEEN
    _SEEN.add(marker)
    return seen


@job_log()
@task()
def flood(lines: int, width: int) -> None:
    """Log ``lines`` lines of ``width`` characters each."""
    for number in range(lines):
        logger.warning("%05d %s", number, "x" * width)


@job_log()
@task()
def alongside(name: str, lines: int) -> None:
    """Log ``lines`` lines naming ``name`` while another job does the same
    (both wait at MEET first)."""
    MEET.wait()
    for number in range(lines):
        logger.warning("%s line %d", name, number)
        if number == lines // 2:
            MEET.wait()


@job_log()
@task()
async def async_chatty(name: str) -> str:
    logger.warning("async %s", name)
    return name


@job_log()
@time_limit(0.5)
@task()
def overruns() -> None:
    """Logs, then loops in Python past its time limit."""
    logger.warning("before the limit")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pass
