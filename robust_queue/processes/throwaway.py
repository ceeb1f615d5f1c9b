"""A start-up step run in a child that exits once it has answered.

Every module and object the supervisor holds when it forks is shared with
its workers and counted once in the tree's memory, for as long as the tree
runs. Some of what it loads is needed only to start: Django's system checks
import the URLconf (with the admin's views and every app's URLs) and the
``makemigrations`` command; the migration check loads every app's
migrations. Run in a throwaway child, a step's imports go with the child
(about 1-2 MiB of the tree's peak, BENCHMARKS.md "Start-up steps in a
throwaway child").

The child is forked only when that is safe: no other thread runs (a lock
another thread holds would stay held in the child) and no database
connection is open (the child would share its socket). Otherwise, or where
there is no ``fork``, the step runs in this process. Either way the caller
gets the step's result or its exception.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import sys
import threading
import traceback
from collections.abc import Callable
from typing import TypeVar

from django.db import connections

logger = logging.getLogger(__name__)

T = TypeVar("T")


def run(step: Callable[[], T]) -> T:
    """``step()``'s result, or its exception raised here; from a throwaway
    child when one can be forked safely."""
    if not _can_fork():
        return step()
    # What this process has buffered must not be written twice.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            stream.flush()
    read, write = os.pipe()
    try:
        pid = os.fork()
    except OSError as exc:  # out of processes or memory: run it here
        os.close(read)
        os.close(write)
        logger.debug("A start-up step runs in process: fork failed (%s)", exc)
        return step()
    if pid == 0:  # pragma: no cover - the child's coverage is not collected
        os.close(read)
        _answer(step, write)
    os.close(write)
    with os.fdopen(read, "rb") as incoming:
        data = incoming.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        raise RuntimeError(
            f"A start-up step's child process (pid {pid}) ended without an answer "
            f"(wait status {status}); what it logged is above."
        )
    try:
        kind, value = pickle.loads(data)
    except Exception as exc:
        raise RuntimeError(f"A start-up step's answer could not be read: {exc!r}") from exc
    if kind == "raised":
        raise value
    return value  # type: ignore[no-any-return]


def _can_fork() -> bool:
    return (
        hasattr(os, "fork")
        and threading.active_count() == 1
        and all(c.connection is None for c in connections.all(initialized_only=True))
    )


def _answer(step: Callable[[], object], fd: int) -> None:
    """In the child: run ``step``, send its outcome, and exit without ever
    returning into the parent's stack."""
    code = 1
    try:
        try:
            outcome: tuple[str, object] = ("returned", step())
        except BaseException as exc:  # noqa: BLE001 - the parent raises it
            # Raised there, it shows where it came from here.
            exc.add_note("In a start-up step's child process:\n" + traceback.format_exc())
            outcome = ("raised", exc)
        try:
            connections.close_all()
        except Exception:  # the answer matters, not the goodbye
            logger.debug("closing a start-up step's connections failed", exc_info=True)
        with os.fdopen(fd, "wb") as out:
            out.write(_pickled(outcome))
        code = 0
    except BaseException:
        logger.exception("A start-up step's child process failed to answer")
    finally:
        os._exit(code)


def _pickled(outcome: tuple[str, object]) -> bytes:
    """``outcome`` as the parent can read it back: an exception that does
    not survive the trip is sent as its class with its message, or as a
    RuntimeError naming it; a result that does not, as a TypeError."""
    if _survives(outcome):
        return pickle.dumps(outcome)
    kind, value = outcome
    if not isinstance(value, BaseException):
        value = TypeError(f"A start-up step returned what cannot be sent back: {value!r}")
    elif _survives(copy := _plain(value, type(value))):
        value = copy
    else:
        value = _plain(value, RuntimeError, f"{type(value).__name__}: ")
    return pickle.dumps(("raised", value))


def _survives(value: object) -> bool:
    try:
        pickle.loads(pickle.dumps(value))
    except Exception:  # noqa: BLE001 - whatever the reason, it does not
        return False
    return True


def _plain(exc: BaseException, kind: type[BaseException], prefix: str = "") -> BaseException:
    """An exception of ``kind`` with ``exc``'s message and notes."""
    try:
        plain = kind(prefix + str(exc))
    except Exception:  # noqa: BLE001 - a class that takes no message
        plain = RuntimeError(f"{type(exc).__name__}: {exc}")
    for note in getattr(exc, "__notes__", ()):
        plain.add_note(note)
    return plain
