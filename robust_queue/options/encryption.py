"""Encrypted arguments at rest: the ``@encrypted`` option.

A task marked ``@encrypted`` stores its arguments in the job row
encrypted with ``ROBUST_QUEUE["encryption_keys"]`` (``sealing.py``);
``@encrypted(result=True)`` stores its return value encrypted too::

    @encrypted(result=True)
    @task
    def charge(card_number, amount): ...

or ``@task(encrypted=True)`` / ``@task(encrypted={"result": True})``.
Keys computed from the arguments are computed from the plaintext before
encryption: the unique key is stored as a hash (its readable label is
withheld, ``withheld_claim``); a concurrency or rate-limit key is what the
task's key function returns, stored as it is.

A leaf: nothing here reads settings or models.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, overload

from ..compat import Task
from .option import Call, Option

if TYPE_CHECKING:
    from .option import TaskDecorator
    from .unique_claims import UniqueClaim


@dataclass(frozen=True, slots=True, kw_only=True)
class Encryption:
    """How a task's job rows are encrypted: arguments always, the return
    value when ``result`` is True."""

    result: bool = False


def _encrypted(*, result: bool = False) -> Encryption:
    """Store the task's arguments encrypted (and its return value too when
    ``result`` is True); stacked over ``@task``."""
    if not isinstance(result, bool):
        raise ValueError(f"'result' must be True or False, not {result!r}.")
    return Encryption(result=result)


def _keyword(value: object) -> object:
    # encrypted=True is @encrypted(); encrypted=False is no option.
    if value is True:
        return Call()
    if value is False:
        return None
    return value


ENCRYPTED = Option(
    name="encrypted",
    kind=Encryption,
    make=_encrypted,
    takes="True or a dict of encrypted() options",
    keyword=_keyword,
)
_decorator = ENCRYPTED.decorator()


@overload
def encrypted(task: Task[..., Any], /) -> Task[..., Any]: ...
@overload
def encrypted(*, result: bool = False) -> TaskDecorator: ...
def encrypted(task: Any = None, /, **options: Any) -> Any:
    """``@encrypted`` or ``@encrypted(result=True)`` over ``@task``: store
    the task's arguments (and with ``result=True`` its return value)
    encrypted with ``ROBUST_QUEUE["encryption_keys"]``."""
    if task is not None:
        if options:
            raise TypeError("encrypted(): takes a task or keyword options, not both.")
        decorate: Callable[[Task[..., Any]], Task[..., Any]] = _decorator()
        return decorate(task)
    return _decorator(**options)


# help() and inspect show the options, as for every option's decorator.
encrypted.__dict__["__signature__"] = getattr(_decorator, "__signature__")  # noqa: B009


WITHHELD = "(encrypted arguments)"


def withheld_claim(task: Task[..., Any], claim: UniqueClaim | None) -> UniqueClaim | None:
    """``claim`` (an enqueue's unique key) with a label that shows no
    argument: the default label holds every argument in plaintext. The
    hash stays the plaintext key's, so duplicates are still found."""
    if claim is None or not claim.label.startswith("unique:"):
        return claim
    return replace(claim, label=f"unique:{task.module_path}/{WITHHELD}")
