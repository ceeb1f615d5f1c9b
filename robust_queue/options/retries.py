"""Automatic retries: a per-task policy, stacked over ``@task``.

``@retry`` returns a copy of the task that carries a ``RetryPolicy``
(``RobustQueueTask.retry``), so ``.using()`` copies keep it. A retry reuses
the same job row: the failed attempt's error is appended and the job is
scheduled after the back-off delay, counted from the database's clock where
the failure is recorded. Without a policy (the default) a failure is final.
Crashes (``ProcessExitError`` and friends) go through the same policy as
exceptions raised by the task.

A leaf: nothing here imports the models or the task registry.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from ..compat import Task
from ..exceptions import JobCancelledError, RetryPolicyError
from .option import Option

logger = logging.getLogger(__name__)

DEFAULT_WAIT = timedelta(seconds=3)
DEFAULT_MAX_WAIT = timedelta(hours=1)
DEFAULT_JITTER = 0.15
# The longest wait a policy may ask for: the retry time must stay a date
# every database stores (and a year is a mistake, not a back-off).
MAX_DELAY = timedelta(days=365)

Backoff = Literal["exponential", "fixed"] | Callable[[int], "timedelta | float"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """Run a task up to ``attempts`` times in all (the first run counts).

    ``backoff`` is ``"exponential"`` (``wait * 2**(n-1)``, capped at
    ``max_wait``, +/- ``jitter``), ``"fixed"`` (``wait``) or a callable
    taking the number of the failed attempt and returning a ``timedelta``
    or seconds. Only exceptions in ``retry_on`` are retried; those in
    ``discard_on`` never are, even when ``retry_on`` matches too.
    """

    attempts: int = 3
    backoff: Backoff = "exponential"
    wait: timedelta = DEFAULT_WAIT
    max_wait: timedelta = DEFAULT_MAX_WAIT
    jitter: float = DEFAULT_JITTER
    retry_on: tuple[type[BaseException], ...] = (Exception,)
    discard_on: tuple[type[BaseException], ...] = ()

    def validate(self) -> list[str]:
        errors = []
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int):
            errors.append(f"'attempts' must be an integer, not {self.attempts!r}.")
        elif self.attempts < 1:
            errors.append(
                f"'attempts' must be at least 1 (the first run counts), not {self.attempts}."
            )
        if not callable(self.backoff) and self.backoff not in ("exponential", "fixed"):
            errors.append(
                f"'backoff' must be 'exponential', 'fixed' or a callable, not {self.backoff!r}."
            )
        for name in ("wait", "max_wait"):
            value = getattr(self, name)
            if not isinstance(value, timedelta) or not timedelta(0) <= value <= MAX_DELAY:
                errors.append(
                    f"'{name}' must be a timedelta from 0 to {MAX_DELAY.days} days, not {value!r}."
                )
        jitter = self.jitter
        if isinstance(jitter, bool) or not isinstance(jitter, (int, float)) or not 0 <= jitter <= 1:
            errors.append(f"'jitter' must be between 0 and 1, not {self.jitter!r}.")
        for name in ("retry_on", "discard_on"):
            if not _are_exception_classes(getattr(self, name)):
                errors.append(f"'{name}' must be a tuple of exception classes.")
        return errors

    def retry_in(self, error: BaseException, attempt: int) -> timedelta | None:
        """How long to wait before running again after ``attempt`` failed
        with ``error``; None: never run again."""
        if attempt >= self.attempts or isinstance(error, self.discard_on):
            return None
        if not isinstance(error, self.retry_on):
            return None
        return self.delay(attempt)

    def delay(self, attempt: int) -> timedelta:
        """The wait after failed attempt number ``attempt`` (1-based).

        Raises ``RetryPolicyError`` if a ``backoff`` callable raises or
        returns anything but a timedelta or seconds from 0 to ``MAX_DELAY``.
        """
        if callable(self.backoff):
            try:
                value = self.backoff(attempt)
            except Exception as exc:
                raise RetryPolicyError(
                    f"its backoff {_name(self.backoff)} raised {exc!r} for attempt {attempt}"
                ) from exc
            return _checked_delay(value, f"its backoff {_name(self.backoff)}", attempt)
        if self.backoff == "fixed":
            return _checked_delay(self.wait, "its fixed wait", attempt)
        # Doubling in seconds, capped before it becomes a timedelta: a
        # high attempt number must not overflow timedelta.
        seconds = self.wait.total_seconds() * 2.0 ** min(attempt - 1, 1000)
        cap = min(self.max_wait.total_seconds(), MAX_DELAY.total_seconds())
        delay = timedelta(seconds=min(seconds, cap))
        # Jitter spreads retries of jobs that failed together.
        spread = delay * self.jitter * (2 * random.random() - 1)
        return max(delay + spread, timedelta(0))


def _retry(
    attempts: int = 3,
    *,
    backoff: Backoff = "exponential",
    wait: timedelta = DEFAULT_WAIT,
    max_wait: timedelta = DEFAULT_MAX_WAIT,
    jitter: float = DEFAULT_JITTER,
    retry_on: tuple[type[BaseException], ...] = (Exception,),
    discard_on: tuple[type[BaseException], ...] = (),
) -> RetryPolicy:
    """Retry a task automatically when it fails (see ``RetryPolicy``)."""
    return RetryPolicy(
        attempts=attempts,
        backoff=backoff,
        wait=wait,
        max_wait=max_wait,
        jitter=jitter,
        retry_on=_as_tuple(retry_on),
        discard_on=_as_tuple(discard_on),
    )


RETRY = Option(name="retry", kind=RetryPolicy, make=_retry, problems=RetryPolicy.validate)
retry = RETRY.decorator()
policy_for = RETRY.of


def retry_in(
    task: Task[..., Any] | None, error: BaseException, attempt: int, *, job: str = ""
) -> timedelta | None:
    """How long until ``task`` runs again after ``attempt`` failed with
    ``error``; None: never (no policy, or the policy says no). A cancelled
    job never runs again, whatever its policy says.

    Never raises: a policy that cannot decide (its backoff raises or
    returns a bad delay) is logged, with ``job`` (a result id) and the
    task, and the job is not retried: its failure is recorded as final.
    """
    if isinstance(error, JobCancelledError):
        return None
    policy = policy_for(task)
    if policy is None:
        return None
    try:
        return policy.retry_in(error, attempt)
    except Exception as exc:
        logger.exception(
            "Job %s of task %s failed and is not retried: its retry policy cannot "
            "say when to run it again (%s)",
            job or "?",
            getattr(task, "module_path", task),
            exc,
        )
        return None


def _checked_delay(value: object, source: str, attempt: int) -> timedelta:
    """``value`` (a timedelta or seconds) as a timedelta from 0 to
    ``MAX_DELAY``; ``RetryPolicyError`` naming ``source`` otherwise."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise RetryPolicyError(
            f"{source} returned {value!r} for attempt {attempt}, "
            "not a timedelta or a number of seconds"
        )
    if not (math.isfinite(seconds) and 0 <= seconds <= MAX_DELAY.total_seconds()):
        raise RetryPolicyError(
            f"{source} returned {value!r} for attempt {attempt}, "
            f"not a delay from 0 to {MAX_DELAY.days} days"
        )
    return value if isinstance(value, timedelta) else timedelta(seconds=seconds)


def _name(backoff: object) -> str:
    return str(getattr(backoff, "__qualname__", None) or repr(backoff))


def _as_tuple(value: object) -> tuple[type[BaseException], ...]:
    # A single class is a common spelling: retry_on=TimeoutError.
    if isinstance(value, type):
        return (value,)
    return tuple(value) if isinstance(value, (list, tuple)) else value  # type: ignore[return-value]


def _are_exception_classes(value: object) -> bool:
    return isinstance(value, tuple) and all(
        isinstance(item, type) and issubclass(item, BaseException) for item in value
    )
