"""Unique jobs: enqueueing a job whose key is taken returns the job that has it.

``@unique`` is stacked over ``@task`` (or given as ``@task(unique=...)``);
it sets the task's ``unique`` option to a ``Uniqueness``. ``enqueue_once``
(``enqueueing.py``) gives one call an idempotency key of the caller's own. Enqueue takes the key
(``unique_claims.py``) in the ``UniqueKey`` table, in the enqueue's
transaction: its unique index lets exactly one of any number of concurrent
enqueues of a key win (see ``UniqueKey.objects.enqueue_all``).

Nothing here touches the database or reads models at import time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..compat import Task
from ..exceptions import ConfigurationError
from .decorators import with_option

KeyFunction = Callable[..., Any]

# The names users give to states, by the job's stored state.
STATE_NAMES = {
    "ready": "ready",
    "scheduled": "scheduled",
    "blocked": "blocked",
    "claimed": "running",
    "finished": "finished",
    "failed": "failed",
}
STATES = tuple(STATE_NAMES.values())
WAITING_STATES = ("ready", "scheduled", "blocked")
ENDED_STATES = ("finished", "failed")
# A state may count only if the states a job passes through to reach it
# count too: the key belongs to one job, and a job that was passed over
# while it did not count never gets the key back.
REACHED_FROM = {
    "ready": ("scheduled", "blocked"),
    "blocked": ("scheduled",),
    "running": ("ready",),
    "finished": ("running",),
    "failed": ("running",),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Uniqueness:
    """While the job holding a key is in one of ``states`` (and, once it
    ended, for ``within``), enqueueing the key again returns that job."""

    key: str | KeyFunction | None = None
    within: timedelta | None = None
    states: tuple[str, ...] | None = None

    def validate(self) -> list[str]:
        errors = []
        if not (self.key is None or isinstance(self.key, str) or callable(self.key)):
            errors.append(f"'key' must be a string or a callable, not {self.key!r}.")
        if isinstance(self.key, str) and not self.key:
            errors.append("'key' must not be empty.")
        if self.within is not None and (
            not isinstance(self.within, timedelta) or self.within <= timedelta(0)
        ):
            errors.append(f"'within' must be a positive timedelta or None, not {self.within!r}.")
        return errors + self._state_errors()

    def _state_errors(self) -> list[str]:
        if self.states is None:
            return []
        if isinstance(self.states, str) or not isinstance(self.states, Iterable):
            return [f"'states' must be a tuple of state names, not {self.states!r}."]
        unknown = [s for s in self.states if s not in STATES]
        if unknown or not self.states:
            return [f"'states' must name some of {', '.join(STATES)}; got {self.states!r}."]
        errors = []
        for state in self.states:
            missing = [s for s in REACHED_FROM.get(state, ()) if s not in self.states]
            if missing:
                errors.append(
                    f"{state!r} can count only with {' and '.join(map(repr, missing))} "
                    "(a job reaches it from there): add them to 'states'."
                )
        ended = [s for s in self.states if s in ENDED_STATES]
        if ended and self.within is None:
            errors.append(
                f"{ended[0]!r} in 'states' needs 'within': how long an ended job still counts."
            )
        if not ended and self.within is not None:
            errors.append("'within' counts ended jobs: add 'finished' to 'states'.")
        return errors

    @property
    def counted_states(self) -> tuple[str, ...]:
        if self.states is not None:
            return tuple(self.states)
        ended = ("finished",) if self.within is not None else ()
        return (*WAITING_STATES, "running", *ended)

    def counts(self, state: str, ended_at: datetime | None, now: datetime | None) -> bool:
        """Whether a job in stored ``state`` still holds its key.

        ``ended_at`` is when it finished or failed; ``now`` the database's
        clock (needed only for an ended job with ``within``).
        """
        name = STATE_NAMES.get(state)
        if name not in self.counted_states:
            return False
        if name not in ENDED_STATES or self.within is None:
            return True
        assert now is not None
        return ended_at is not None and ended_at + self.within > now


# An idempotency key counts for as long as its job is kept, in any state.
ONCE = Uniqueness(states=STATES)


def unique(
    key: str | KeyFunction | None = None,
    *,
    within: timedelta | None = None,
    states: Sequence[str] | None = None,
) -> Callable[[Task[..., Any]], Task[..., Any]]:
    """Enqueue a task at most once per key while its job counts.

    ``key`` is a string or a callable over the task's arguments (default:
    all arguments); ``states`` are the states in which the job holding the
    key counts (default: waiting and running, plus finished with
    ``within``); ``within`` is how long an ended job still counts.
    Enqueueing a duplicate writes no job and returns the existing job's
    result.
    """
    uniqueness = build_uniqueness(key=key, within=within, states=states)

    def decorator(task: Task[..., Any]) -> Task[..., Any]:
        return with_option("unique", task, uniqueness)

    return decorator


def build_uniqueness(*, key: Any = None, within: Any = None, states: Any = None) -> Uniqueness:
    """A validated ``Uniqueness``; ``ConfigurationError`` lists what is wrong."""
    if states is not None and not isinstance(states, str) and isinstance(states, Iterable):
        states = tuple(states)
    uniqueness = Uniqueness(key=key, within=within, states=states)
    errors = uniqueness.validate()
    if errors:
        raise ConfigurationError("unique(): " + " ".join(errors))
    return uniqueness


def uniqueness_from(value: object) -> Uniqueness:
    """The ``@task(unique=...)`` keyword: True, a dict of ``unique()``
    options, or a ``Uniqueness``."""
    if isinstance(value, Uniqueness):
        return value
    if value is True:
        return build_uniqueness()
    if not isinstance(value, Mapping):
        raise ConfigurationError(
            f"@task(unique=...) takes True or a dict of unique() options, not {value!r}."
        )
    try:
        return build_uniqueness(**value)
    except TypeError as exc:
        raise ConfigurationError(f"@task(unique=...): {exc}") from exc
