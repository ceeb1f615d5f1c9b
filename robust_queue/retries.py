"""Automatic retries: a per-task policy, stacked over ``@task``.

A retry reuses the same job row: the failed attempt's error is appended and
the job is scheduled at the back-off time. Without a policy (the default)
a failure is final. Crashes (``ProcessExitError`` and friends) go through
the same policy as exceptions raised by the task.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Literal

from django.utils import timezone

from .compat import Task
from .decorators import require_task
from .exceptions import ConfigurationError, UnknownTaskError
from .registry import resolve_task

if TYPE_CHECKING:
    from .models import Job

DEFAULT_WAIT = timedelta(seconds=3)
DEFAULT_MAX_WAIT = timedelta(hours=1)
DEFAULT_JITTER = 0.15

Backoff = Literal["exponential", "fixed"] | Callable[[int], "timedelta | float"]

# Policies by task path; the Task itself is a frozen dataclass.
_POLICIES: dict[str, RetryPolicy] = {}


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
                f"'attempts' must be at least 1 (the first run counts), not "
                f"{self.attempts}."
            )
        if not callable(self.backoff) and self.backoff not in ("exponential", "fixed"):
            errors.append(
                "'backoff' must be 'exponential', 'fixed' or a callable, not "
                f"{self.backoff!r}."
            )
        for name in ("wait", "max_wait"):
            value = getattr(self, name)
            if not isinstance(value, timedelta) or value < timedelta(0):
                errors.append(f"'{name}' must be a timedelta >= 0, not {value!r}.")
        if not isinstance(self.jitter, (int, float)) or not 0 <= self.jitter <= 1:
            errors.append(f"'jitter' must be between 0 and 1, not {self.jitter!r}.")
        for name in ("retry_on", "discard_on"):
            if not _are_exception_classes(getattr(self, name)):
                errors.append(f"'{name}' must be a tuple of exception classes.")
        return errors

    def retry_at(self, error: BaseException, attempt: int) -> datetime | None:
        """When to run again after ``attempt`` failed; None: never."""
        if attempt >= self.attempts or isinstance(error, self.discard_on):
            return None
        if not isinstance(error, self.retry_on):
            return None
        return timezone.now() + self.delay(attempt)

    def delay(self, attempt: int) -> timedelta:
        """The wait after failed attempt number ``attempt`` (1-based)."""
        if callable(self.backoff):
            value = self.backoff(attempt)
            return value if isinstance(value, timedelta) else timedelta(seconds=value)
        if self.backoff == "fixed":
            return self.wait
        delay = min(self.wait * 2 ** (attempt - 1), self.max_wait)
        # Jitter spreads retries of jobs that failed together.
        spread = delay * self.jitter * (2 * random.random() - 1)
        return max(delay + spread, timedelta(0))


def retry(
    attempts: int = 3,
    *,
    backoff: Backoff = "exponential",
    wait: timedelta = DEFAULT_WAIT,
    max_wait: timedelta = DEFAULT_MAX_WAIT,
    jitter: float = DEFAULT_JITTER,
    retry_on: tuple[type[BaseException], ...] = (Exception,),
    discard_on: tuple[type[BaseException], ...] = (),
) -> Callable[[Task], Task]:
    """Retry a task automatically when it fails (see ``RetryPolicy``)."""
    policy = RetryPolicy(
        attempts=attempts,
        backoff=backoff,
        wait=wait,
        max_wait=max_wait,
        jitter=jitter,
        retry_on=_as_tuple(retry_on),
        discard_on=_as_tuple(discard_on),
    )
    errors = policy.validate()
    if errors:
        raise ConfigurationError("retry(): " + " ".join(errors))

    def decorator(task: Task) -> Task:
        _POLICIES[require_task("retry", task).module_path] = policy
        return task

    return decorator


def policy_for(task: Task) -> RetryPolicy | None:
    return _POLICIES.get(task.module_path)


def retry_at(task: Task, error: BaseException, attempt: int) -> datetime | None:
    """When ``task`` runs again after ``attempt`` failed with ``error``."""
    policy = policy_for(task)
    return None if policy is None else policy.retry_at(error, attempt)


def retry_at_for_job(job: Job, error: BaseException) -> datetime | None:
    """The same for a stored job, e.g. one whose worker crashed."""
    try:
        task = resolve_task(job.task_path, job.backend_alias)
    except UnknownTaskError:
        return None
    return retry_at(task, error, attempt=len(job.worker_ids))


def _as_tuple(value: object) -> tuple[type[BaseException], ...]:
    # A single class is a common spelling: retry_on=TimeoutError.
    if isinstance(value, type):
        return (value,)
    return tuple(value) if isinstance(value, (list, tuple)) else value  # type: ignore[return-value]


def _are_exception_classes(value: object) -> bool:
    return isinstance(value, tuple) and all(
        isinstance(item, type) and issubclass(item, BaseException) for item in value
    )
