"""Tasks written as resumable steps, for the steps tests.

Each step writes ledger entries keyed ``<tag>:<what>`` with the attempt
that did it, so a test can count which step ran in which attempt.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from typing import Any

import robust_queue
from robust_queue.compat import TaskContext, task
from testproject.models import LedgerEntry


def _note(context: TaskContext, tag: str, what: str) -> None:
    LedgerEntry.objects.create(key=f"{tag}:{what}", attempt=context.attempt)


@task(takes_context=True)
def three_steps(
    context: TaskContext, tag: str, items: int, hold: str = "", break_at: int = -1
) -> Any:
    return _three_steps(context, tag, items, hold, break_at=break_at)


@robust_queue.retry(2, backoff="fixed", wait=timedelta(0))
@task(takes_context=True)
def three_steps_retried(
    context: TaskContext, tag: str, items: int, fail: bool = True, break_at: int = -1
) -> Any:
    return _three_steps(context, tag, items, fail=fail, break_at=break_at)


def _three_steps(
    context: TaskContext,
    tag: str,
    items: int,
    hold: str = "",
    fail: bool = False,
    break_at: int = -1,
) -> Any:
    """Download, then process ``items`` items one by one with a cursor,
    then finish. On its first attempt, step 2 waits at item 3 until the
    file ``hold`` exists (a stop comes first) or raises at ``break_at``,
    and step 3 raises if ``fail``."""
    steps = robust_queue.steps(context)

    @steps.step("download")
    def downloaded(step: robust_queue.Step) -> str:
        _note(context, tag, "download")
        return "file"

    @steps.step("process")
    def processed(step: robust_queue.Step) -> int:
        start = step.cursor or 0
        _note(context, tag, f"process-from-{start}")
        for item in range(start, items):
            if hold and item == 3 and context.attempt == 1:
                _wait_for(hold)
            if item == break_at and context.attempt == 1:
                raise RuntimeError(f"item {item} failed on purpose")
            _note(context, tag, f"item-{item}")
            step.checkpoint(item + 1)
        return items

    @steps.step("finish")
    def finished(step: robust_queue.Step) -> str:
        _note(context, tag, "finish")
        if fail and context.attempt == 1:
            raise RuntimeError("step 3 failed on purpose")
        return "finished"

    return [downloaded, processed, finished, list(steps.done)]


def _wait_for(path: str) -> None:
    deadline = time.monotonic() + 60
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)


@task(takes_context=True)
async def async_steps(context: TaskContext) -> Any:
    """Steps are for ``def`` tasks: this one fails with StepError."""
    return robust_queue.steps(context).done
