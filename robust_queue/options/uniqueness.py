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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .keys import KeyFunction
from .option import Call, Option

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


def _unique(
    key: str | KeyFunction | None = None,
    *,
    within: timedelta | None = None,
    states: Sequence[str] | None = None,
) -> Uniqueness:
    """Enqueue a task at most once per key while its job counts.

    ``key`` is a string or a callable over the task's arguments (default:
    all arguments); ``states`` are the states in which the job holding the
    key counts (default: waiting and running, plus finished with
    ``within``); ``within`` is how long an ended job still counts.
    Enqueueing a duplicate writes no job and returns the existing job's
    result.
    """
    return Uniqueness(key=key, within=within, states=_names(states))


def _names(states: object) -> Any:
    # Any iterable of names; anything else is for validate() to refuse.
    if states is not None and not isinstance(states, str) and isinstance(states, Iterable):
        return tuple(states)
    return states


def _keyword(value: object) -> object:
    # unique=True is @unique(); unique=False is no option.
    if isinstance(value, bool):
        return Call() if value else None
    return value


UNIQUE = Option(
    name="unique",
    kind=Uniqueness,
    make=_unique,
    problems=Uniqueness.validate,
    takes="True or a dict of unique() options",
    keyword=_keyword,
)
unique = UNIQUE.decorator()
