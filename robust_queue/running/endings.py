"""How a run ended, and writing its outcome: in the job's thread, or handed
on to the worker's retrier when the write keeps failing (``Defer``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from ..compat import TaskResultStatus
from ..models.error_record import storable_text
from . import attempt_log
from .finalizing import (
    Finalized,
    FinalizePostponed,
    describe,
    record_failure,
    record_snooze,
    record_success,
)

if TYPE_CHECKING:
    from ..models import ClaimedExecution, NextClaim

# Takes on a finalize that kept failing: (claim, what the body did,
# resume). ``resume()`` tries once more and does what follows the write;
# it raises ``FinalizePostponed`` while the write still fails.
Defer = Callable[["ClaimedExecution", str, Callable[[], None]], None]
# How often a job thread tries to write an outcome before it hands it on
# (``defer``): a blip passes in these, an outage does not.
DEFAULT_QUICK_TRIES = 3
# Writes the outcome: (patience, in_doubt) -> how it was recorded.
Record = Callable[[int | None, bool], Finalized]


@dataclass(frozen=True, slots=True)
class Ending:
    """How a run ended: how to write it, and what to say of it."""

    record: Record
    outcome: str  # the attempt's (attempt_log)
    # What the body did, said if its outcome cannot be written; built
    # only then (quoting a value on every finish costs the hot path).
    did: Callable[[], str]
    status: TaskResultStatus  # READY: snoozed, waiting again
    value: Any = None
    # A failure's error record (exception class path, traceback): the
    # attempt's log line names it.
    error: dict[str, str] | None = None


def succeeded(claimed: ClaimedExecution, value: Any, then: NextClaim | None) -> Ending:
    def record(patience: int | None, in_doubt: bool) -> Finalized:
        # A resumed write claims nothing more: its thread moved on.
        following = None if in_doubt else then
        return record_success(claimed, value, following, patience=patience, in_doubt=in_doubt)

    def did() -> str:
        return f"it returned {describe(value)}"

    return Ending(record, attempt_log.SUCCESSFUL, did, TaskResultStatus.SUCCESSFUL, value)


def failed(claimed: ClaimedExecution, error: dict[str, str], retry_in: timedelta | None) -> Ending:
    def record(patience: int | None, in_doubt: bool) -> Finalized:
        return record_failure(claimed, error, retry_in, patience=patience, in_doubt=in_doubt)

    outcome = attempt_log.FAILED if retry_in is None else attempt_log.RETRIED
    return Ending(record, outcome, partial(_raised, error), TaskResultStatus.FAILED, error=error)


def snoozed(claimed: ClaimedExecution, delay: timedelta) -> Ending:
    """A run that raised ``Snooze`` (``snoozing.py``)."""

    def record(patience: int | None, in_doubt: bool) -> Finalized:
        return record_snooze(claimed, delay, patience=patience)

    return Ending(
        record, attempt_log.SNOOZED, lambda: f"it snoozed for {delay}", TaskResultStatus.READY
    )


def finalize(
    claimed: ClaimedExecution,
    record: Record,
    after: Callable[[Finalized], None],
    handoff: tuple[Defer | None, Callable[[], str]],
    in_doubt: bool = False,
) -> bool:
    """Write the outcome (``record``), then do what follows it (``after``).

    ``handoff``: (perform()'s ``defer``, what the body did). With a
    ``defer`` a write that keeps failing goes there, ``after`` with it.
    ``in_doubt``: an earlier write of it raised, and may have committed.
    True unless the claim was found gone.
    """
    defer, did = handoff
    if defer is None:
        finalized = record(None, in_doubt)
    else:
        try:
            finalized = record(DEFAULT_QUICK_TRIES, in_doubt)
        except FinalizePostponed:
            # One try per resume: the retrier serves every pending finalize.
            defer(claimed, did(), lambda: after(record(1, True)))
            return True
    after(finalized)
    return finalized is not Finalized.SKIPPED


def _raised(error: dict[str, str]) -> str:
    # A traceback's last line names the exception and its message.
    last = error.get("traceback", "").rstrip().rsplit("\n", 1)[-1]
    return f"it raised {storable_text(last, 200)}"
