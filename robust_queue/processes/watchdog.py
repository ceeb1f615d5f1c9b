"""A worker's watchdog: time limits and cancellation of running bodies.

Each body runs under a ``Watch``. The watchdog thread interrupts a body
past its time limit, or whose cancel was requested more than
``cancel_grace_period`` ago, by raising an exception asynchronously in its
thread (``PyThreadState_SetAsyncExc``): Python code stops at its next
bytecode; a call blocked in C (``time.sleep``, a socket read) does not.
An ``async def`` body is cancelled in its event loop instead
(``async_bodies.py``): it stops where it awaits. When the body has not
ended ``interrupt_grace_period`` after that, the watchdog calls
``on_hung``: the worker records the job's failure, lets its other jobs
finish and exits, and the supervisor starts a new one.

The interrupt is sent only while the body runs (under the watch's lock)
and at most once; once the body has ended, a pending interrupt is cleared,
so it can never land in the code that records the outcome.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from django.db import DatabaseError, connections

from .. import conf
from ..compat import Task
from ..exceptions import JobCancelledError, RobustQueueError, TaskTimeoutError
from ..models import ClaimedExecution
from ..models.sql import query_log
from ..options import time_limits
from ..running.performing import Body
from . import async_bodies
from .outage import FailureGate, ReportFailure

logger = logging.getLogger(__name__)

TICK = 0.1
# How often a busy worker looks for cancel requests of its jobs.
CANCEL_POLL_INTERVAL = 1.0

# Watches of bodies running in this process, by result id (for
# cancel_requested()).
_RUNNING: dict[str, Watch] = {}
_running_lock = threading.Lock()


class _Interrupt(BaseException):
    """Raised in a body's thread; not an Exception, so ``except Exception``
    in a task does not swallow it."""


def cancel_seen(result_id: str) -> bool | None:
    """Whether this process saw a cancel request for the running job
    ``result_id``; None if the job does not run here."""
    with _running_lock:
        watch = _RUNNING.get(result_id)
    return None if watch is None else watch.cancelled


class Watch:
    """One body under watch, in the thread that runs it."""

    def __init__(
        self, claimed: ClaimedExecution, limit: float | None, *, is_async: bool = False
    ) -> None:
        self.claim_pk = claimed.pk
        self.job_id = claimed.job_id
        self.result_id = claimed.job.result_id
        self.limit = limit
        self.thread_id = threading.get_ident()
        self.started = time.monotonic()
        self.cancelled = False
        self.cancel_seen_at: float | None = None
        self.sent_at: float | None = None
        self.reason = ""
        self.hung = False
        self._in_body = True
        # An async body is cancelled in its loop, never interrupted.
        self.is_async = is_async
        self._async_task: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = None
        self._lock = threading.Lock()

    def stop_error(self) -> RobustQueueError:
        """The error this job ends with."""
        if self.cancelled:
            return JobCancelledError(f"Job {self.result_id} was cancelled while running.")
        return TaskTimeoutError(f"Job {self.result_id} ran past its time limit of {self.limit:g}s.")

    def interrupt(self, reason: str) -> None:
        """Raise ``_Interrupt`` in the body's thread, once, if it still runs."""
        with self._lock:
            if self.sent_at is not None or not self._in_body:
                return
            self.reason = reason
            self.sent_at = time.monotonic()
            if not self.is_async:
                _set_async_exc(self.thread_id, _Interrupt)
            elif self._async_task is not None:
                loop, task = self._async_task
                loop.call_soon_threadsafe(task.cancel)
            # Else its loop has not started yet: attach() cancels it.

    def attach(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        """An async body runs as ``task`` in ``loop`` (in the loop's thread)."""
        with self._lock:
            self._async_task = (loop, task)
            if self.sent_at is not None:
                task.cancel()

    def detach(self) -> None:
        """The async body's loop is about to close."""
        with self._lock:
            self._async_task = None

    def leave(self) -> None:
        """The body has ended: no interrupt may land from now on."""
        with self._lock:
            self._in_body = False
            if self.sent_at is not None and not self.is_async:
                # Sent but not raised yet: drop it.
                _set_async_exc(self.thread_id, None)

    @property
    def in_body(self) -> bool:
        return self._in_body


class Watchdog:
    def __init__(
        self,
        *,
        using: str,
        process_pk: int,
        on_hung: Callable[[Watch], None],
        report_failure: ReportFailure | None = None,
    ) -> None:
        self.using = using
        self.process_pk = process_pk
        self.on_hung = on_hung
        # A database outage is the process's to report, once.
        self._poll_failures = FailureGate(report_failure, "Cancel poll")
        self._watches: dict[int, Watch] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._polled_at = 0.0
        self._thread = threading.Thread(target=self._loop, name="rq-watchdog", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, wait: float = 0.0) -> None:
        """End the loop; wait up to ``wait`` s for a round in progress."""
        self._stopped.set()
        if wait and self._thread.is_alive():
            self._thread.join(wait)

    def guard(self, claimed: ClaimedExecution, task: Task[..., Any], body: Body) -> Any:
        """Run ``body`` (a job's task) in this thread under watch."""
        is_async = async_bodies.is_async(body)
        watch = Watch(claimed, time_limits.limit_for(task), is_async=is_async)
        run: Callable[[], Any] = body
        if is_async:
            run = partial(async_bodies.run_cancellable, watch, body)
        with self._lock:
            self._watches[watch.claim_pk] = watch
        with _running_lock:
            _RUNNING[watch.result_id] = watch
        try:
            return _run_watched(watch, run)
        finally:
            with self._lock:
                self._watches.pop(watch.claim_pk, None)
            with _running_lock:
                _RUNNING.pop(watch.result_id, None)

    def _loop(self) -> None:
        try:
            while not self._stopped.wait(TICK):
                query_log.forget()
                try:
                    self._check_once()
                except Exception:
                    # A database outage while recording a hung job, a bad
                    # setting: the watchdog must outlive one bad round.
                    logger.exception("The watchdog's round failed; it goes on")
        finally:
            connections.close_all()

    def _check_once(self) -> None:
        with self._lock:
            watches = list(self._watches.values())
        if not watches:
            return
        now = time.monotonic()
        if now - self._polled_at >= CANCEL_POLL_INTERVAL:
            self._polled_at = now
            self._look_for_cancels(watches, now)
        for watch in watches:
            self._check(watch, now)

    def _check(self, watch: Watch, now: float) -> None:
        if watch.sent_at is None:
            if watch.limit is not None and now - watch.started >= watch.limit:
                logger.warning("Job %s ran past its time limit; interrupting it", watch.result_id)
                watch.interrupt("timeout")
            elif watch.cancel_seen_at is not None and (
                now - watch.cancel_seen_at >= conf.get(conf.CANCEL_GRACE_PERIOD)
            ):
                logger.warning("Cancelled job %s did not stop; interrupting it", watch.result_id)
                watch.interrupt("cancel")
        elif (
            not watch.hung
            and watch.in_body
            and (now - watch.sent_at >= conf.get(conf.INTERRUPT_GRACE_PERIOD))
        ):
            watch.hung = True
            self.on_hung(watch)

    def _look_for_cancels(self, watches: list[Watch], now: float) -> None:
        waiting = {w.claim_pk: w for w in watches if not w.cancelled}
        if not waiting:
            return
        try:
            claims = ClaimedExecution.objects.using(self.using).filter(
                pk__in=list(waiting), cancel_requested_at__isnull=False
            )
            requested = list(claims.values_list("pk", flat=True))
        except DatabaseError as exc:
            self._poll_failures.failed(exc)
            connections[self.using].close()
            return
        self._poll_failures.succeeded()
        for pk in requested:
            watch = waiting[pk]
            watch.cancel_seen_at = now
            watch.cancelled = True
            logger.info("Job %s was asked to cancel", watch.result_id)


def _run_watched(watch: Watch, body: Callable[[], Any]) -> Any:
    """``body``'s value; the watch's error if it was stopped or cancelled,
    even when the body caught the interrupt and returned.

    The interrupt lands at most once, anywhere up to ``leave()``: every
    such place is inside the outer ``try``.
    """
    try:
        try:
            value = body()
        finally:
            watch.leave()
    except BaseException as exc:
        if _is_interrupt(exc):
            watch.leave()
            _drop_connections()
            raise watch.stop_error() from None
        if _was_stopped(watch):
            raise watch.stop_error() from exc
        raise
    if _was_stopped(watch):
        # It stopped by itself (cancel_requested()), or caught the
        # interrupt and returned: stopped all the same, whatever it gave.
        raise watch.stop_error()
    return value


def _was_stopped(watch: Watch) -> bool:
    """Whether the body's outcome is the watch's error: its cancel was
    requested, or an interrupt was sent (``leave()`` has run, so
    ``sent_at`` no longer changes)."""
    if watch.sent_at is not None:
        # The interrupt may have landed in a query the body then went on
        # from: its connection is not to be trusted.
        _drop_connections()
        return True
    return watch.cancelled


def _is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is the interrupt, or was raised while handling it.

    The interrupt can land inside a library's cleanup (a COMMIT in
    ``atomic().__exit__``); what then escapes is the cleanup's own error
    (psycopg: "can't change 'autocommit' now"), with the interrupt as its
    context. It is still a stop: its connection is left mid-command.
    """
    pending: list[BaseException] = [exc]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if isinstance(current, _Interrupt):
            return True
        if id(current) in seen:
            continue
        seen.add(id(current))
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return False


def _drop_connections() -> None:
    """Close this thread's connections: the body was stopped at any point,
    maybe between sending a query and reading its result, and its outcome
    is written next. The next use opens a fresh one."""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close()


def _set_async_exc(thread_id: int, exc: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc is not None else None
    )
