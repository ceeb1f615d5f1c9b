"""Recording a job's outcome: retried while transient, replaced if refused.

A job whose body ran ends FINISHED or FAILED; it never stays claimed while
its worker lives (Solid Queue's open bug #748). Each write is fenced by the
claim row (``ClaimedExecution.finish``/``fail``): once the claim is gone,
e.g. the process was pruned meanwhile, nothing is written.

- A transient error (a lost connection, a lock or deadlock timeout) is
  retried with back-off for as long as the worker lives; each retry checks
  the fence again, so it ends once the claim is no longer this worker's.
  ``patience``: after that many tries ``FinalizePostponed`` is raised
  instead, and the caller retries later (a worker's job thread hands the
  outcome to the worker's retrier and takes new work).
- A permanent error (a value the database refuses: ``DataError``,
  ``IntegrityError``, MySQL's packet limit) replaces the outcome with a
  ``FinalizeError`` failure that quotes the value, escaped and cut.
- A write whose answer was lost may have committed: a retry then finds
  the claim gone. The job says whether it was this write
  (``ClaimedExecution.finish_landed``/``fail_landed``); if so the outcome
  is recorded (signals, statistics) as if the answer had come.
"""

from __future__ import annotations

import enum
import logging
import reprlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.db import (
    InterfaceError,
    InternalError,
    OperationalError,
    connections,
)

from ..backoff import exponential
from ..exceptions import FinalizeError
from ..models.error_record import error_record, storable_text
from ..models.sql import dialect_for
from .snoozing import snooze_claim

if TYPE_CHECKING:
    from ..models import ClaimedExecution, NextClaim

logger = logging.getLogger(__name__)

DEFAULT_BACKOFF = 0.1
DEFAULT_MAX_BACKOFF = 5.0
# How much of a refused value or error a FinalizeError quotes.
DEFAULT_QUOTED_CHARS = 2000

_QUOTE = reprlib.Repr()
_QUOTE.maxstring = _QUOTE.maxother = DEFAULT_QUOTED_CHARS // 4
_QUOTE.maxlist = _QUOTE.maxdict = _QUOTE.maxtuple = 20
_QUOTE.maxlevel = 8


class FinalizePostponed(Exception):
    """The outcome could not be written in the tries allowed (``patience``):
    the caller tries again later. Never reaches a user: a worker's retrier
    takes it on."""


class Finalized(enum.Enum):
    RECORDED = "recorded"  # the outcome is stored
    REPLACED = "replaced"  # refused: a FinalizeError failure is stored instead
    SKIPPED = "skipped"  # the claim was gone; someone else finalized the job


def record_success(
    claimed: ClaimedExecution,
    value: Any,
    then: NextClaim | None = None,
    *,
    patience: int | None = None,
    in_doubt: bool = False,
) -> Finalized:
    """Store ``value`` as the job's result (see the module docstring).

    ``then``: claim the thread's next job with the same commit. Tried once:
    if that raises, nothing of it was written, and the success is recorded
    on its own as without ``then`` (retried, or replaced if refused), so a
    failing claim can never turn a success into a failure. ``in_doubt``:
    an earlier try raised (a postponed finalize resumed).
    """
    using = claimed._state.db or "default"
    if then is not None and not connections[using].in_atomic_block:
        try:
            done = claimed.finish(value, then)
        except Exception as exc:  # noqa: BLE001 - the plain path below decides
            # then.claimed is set only once the statement went through.
            logger.debug("Finish and claim of job %s failed: %r", claimed.job_id, exc)
            recover(using)
            in_doubt = True
        else:
            return Finalized.RECORDED if done else Finalized.SKIPPED
    step = Step(lambda: claimed.finish(value), lambda: claimed.finish_landed(value), in_doubt)
    return _record(claimed, step, value, ("return value", _QUOTE.repr(value)), patience)


def record_failure(
    claimed: ClaimedExecution,
    error: dict[str, str],
    retry_in: timedelta | None = None,
    *,
    patience: int | None = None,
    in_doubt: bool = False,
) -> Finalized:
    """Store one failed attempt, retried ``retry_in`` from now if given."""
    quote = f"{error.get('exception_class_path')}\n{error.get('traceback')}"
    step = Step(
        lambda: claimed.fail(error, retry_in),
        lambda: claimed.fail_landed(error, retry_in),
        in_doubt,
    )
    return _record(claimed, step, error, ("failure", quote), patience)


def record_snooze(
    claimed: ClaimedExecution, delay: timedelta, *, patience: int | None = None
) -> Finalized:
    """Give the job back to run ``delay`` from now (``snoozing.py``)."""
    # A snooze whose answer was lost leaves nothing to tell it from a
    # release: recorded as skipped (the job waits again either way).
    step = Step(lambda: snooze_claim(claimed, delay))
    return _record(claimed, step, None, ("snooze", f"Snooze({delay})"), patience)


def describe(value: Any) -> str:
    """A short quote of ``value`` for a log line or an error message."""
    return storable_text(_QUOTE.repr(value), 200)


@dataclass
class Step:
    """One finalizing write: ``write`` answers whether it went through (False:
    the claim was gone); after an error, ``landed`` whether that earlier
    write committed though its answer was lost. ``in_doubt``: such an error
    came before (a finish-and-claim)."""

    write: Callable[[], bool]
    landed: Callable[[], bool] = lambda: False
    in_doubt: bool = False


def _record(
    claimed: ClaimedExecution,
    step: Step,
    stored: Any,
    said: tuple[str, str],
    patience: int | None,
) -> Finalized:
    """Run ``step`` until done; if refused, store a FinalizeError instead.

    ``said``: what is stored, and its quote. Raises ``FinalizeError`` only
    if that is refused too: the claim then stays for the supervisor to
    fail; ``FinalizePostponed`` once ``patience`` tries failed.
    """
    what, quote = said
    done = _until_done(claimed, step, stored, patience)
    if isinstance(done, bool):
        return Finalized.RECORDED if done else Finalized.SKIPPED
    logger.error(
        "The database refused the %s of job %s (%s); recording a FinalizeError",
        what,
        claimed.job_id,
        done,
    )
    refusal = _refusal(claimed, done, what, quote)
    fallback = _until_done(
        claimed,
        Step(lambda: claimed.fail(refusal), lambda: claimed.fail_landed(refusal)),
        refusal,
        patience,
    )
    if isinstance(fallback, bool):
        return Finalized.REPLACED if fallback else Finalized.SKIPPED
    raise FinalizeError(
        f"Job {claimed.job_id}: neither its {what} nor a FinalizeError could "
        f"be recorded: {fallback}"
    ) from fallback


def _until_done(
    claimed: ClaimedExecution, step: Step, stored: Any, patience: int | None = None
) -> bool | Exception:
    """``step``'s answer, retrying transient errors; a permanent one is returned.

    A retry that finds the claim gone after an error asks whether the
    earlier write committed (``Step.landed``): True then, as if its answer
    had come. Inside a caller's transaction (never in a worker) a transient
    error is raised: that transaction is broken, or the caller's to retry.
    """
    using = claimed._state.db or "default"
    in_doubt = step.in_doubt
    attempt = 0
    while True:
        attempt += 1
        try:
            return step.write() or (in_doubt and _landed(claimed, step))
        except Exception as exc:
            if _is_permanent(exc, using, stored):
                recover(using)
                return exc
            if connections[using].in_atomic_block:
                raise
            in_doubt = True
            if patience is not None and attempt >= patience:
                recover(using)
                raise FinalizePostponed(f"Finalizing job {claimed.job_id} failed: {exc}") from exc
            _wait_to_retry(claimed, exc, attempt)
            recover(using)


def _landed(claimed: ClaimedExecution, step: Step) -> bool:
    if not step.landed():
        return False
    logger.warning(
        "Job %s: the database's answer to its outcome was lost, but the outcome was recorded",
        claimed.job_id,
    )
    return True


def _is_permanent(exc: Exception, using: str, stored: Any) -> bool:
    if not isinstance(exc, (OperationalError, InterfaceError, InternalError)):
        # DataError, IntegrityError, ProgrammingError, or not a database
        # error at all: trying again writes the same thing again.
        return True
    # A vendor's own refusal that looks transient (MySQL's packet limit).
    return dialect_for(using).refuses_value(exc, stored)


def _refusal(claimed: ClaimedExecution, exc: Exception, what: str, quote: str) -> dict[str, str]:
    """The failure stored in place of an outcome the database refused."""
    cls = type(exc)
    error = FinalizeError(
        f"The database refused the {what} of job {claimed.job_id} "
        f"({cls.__module__}.{cls.__qualname__}: {exc}). The {what} was: "
        f"{storable_text(quote, DEFAULT_QUOTED_CHARS)}"
    )
    error.__cause__ = exc
    return error_record(error)


def _wait_to_retry(claimed: ClaimedExecution, exc: Exception, attempt: int) -> None:
    delay = exponential(DEFAULT_BACKOFF, attempt, DEFAULT_MAX_BACKOFF)
    # Attempts 1, 2, 4, 8...: a long outage does not flood the log.
    if attempt & (attempt - 1) == 0:
        logger.warning(
            "Finalizing job %s failed (attempt %d: %s); retrying in %.1fs",
            claimed.job_id,
            attempt,
            exc,
            delay,
        )
    time.sleep(delay)


def recover(using: str) -> None:
    """Replace this thread's connection if it is broken.

    A usable one is kept, with its session settings.
    """
    connection = connections[using]
    if connection.in_atomic_block:
        return
    if connection.connection is not None and connection.is_usable():
        connection.errors_occurred = False
    else:
        connection.close()
