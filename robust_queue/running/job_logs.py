"""A job's own log: what its task logs during an attempt, kept with it.

For a task whose job log is on (``options/job_logs.py``), ``capturing``
puts a ``_Capture`` in a context variable while the body runs: one line
a record (time, level, logger, message, traceback), masked as it comes
(``masking``), at most ``MAX_BYTES`` an attempt and then a marker saying
how much was left out. One handler on the root logger, added when the
first such job starts, hands each record to the capture of the context it
was emitted in: the worker thread's (a thread has its own context) and
an ``async def`` body's loop (it runs in a copy of it). A record of
another thread or job is never in a job's log; one from a thread the task
starts is not either. At the body's end the text is stored with the
attempt (``models/attempt_logs.py``): one UPDATE, fenced by the claim,
of the earlier attempts' logs (read with the claim) and this one's; an
attempt that logged nothing writes nothing.

Off (the default), ``capturing`` hands back a shared no-op context:
no handler, no query, no write.

What is captured is what the project's logging lets through to the root
logger: a logger below its effective level, or one that does not
propagate, gives nothing; ``@job_log(level=...)`` keeps fewer.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError, connections, transaction

from ..masking.logs import safe_rules
from ..models import attempt_logs
from ..models.attempt_history import stored_worker_ids
from ..options.job_logs import level_for

if TYPE_CHECKING:
    from ..compat import Task
    from ..models import ClaimedExecution

logger = logging.getLogger(__name__)

# The most an attempt's log keeps (UTF-8 bytes), marker not counted.
MAX_BYTES = 64 * 1024
TRUNCATED = "[log truncated: {} more bytes]"

_OFF = contextlib.nullcontext()
_CURRENT: ContextVar[_Capture | None] = ContextVar("robust_queue_job_log", default=None)
_FORMATTER = logging.Formatter()
_install_lock = threading.Lock()


def capturing(
    claimed: ClaimedExecution, task: Task[..., Any]
) -> contextlib.AbstractContextManager[Any]:
    """Keep what the body of ``claimed`` logs, if its task asks for it."""
    level = level_for(task)
    if level is None:
        return _OFF
    return _Capturing(claimed, _Capture(level))


class _Capture:
    """The lines of one attempt, capped at ``MAX_BYTES``."""

    def __init__(self, level: int) -> None:
        self.level = level
        self._rules = safe_rules()
        self._lines: list[str] = []
        self._size = 0
        self._dropped = 0
        self._lock = threading.Lock()
        self._busy = threading.local()

    def add(self, record: logging.LogRecord) -> None:
        if record.levelno < self.level or getattr(self._busy, "on", False):
            return
        # A record logged while one is added (masking's own warning)
        # would come back here.
        self._busy.on = True
        try:
            line = _line(record)
            with self._lock:
                self._keep(line)
        finally:
            self._busy.on = False

    def _keep(self, line: str) -> None:
        if self._dropped:
            self._dropped += len(line.encode()) + 1
            return
        shown = self._rules.text(line).encode() + b"\n"
        room = MAX_BYTES - self._size
        if len(shown) > room:
            # Cut on a character, never inside one.
            self._lines.append(shown[:room].decode(errors="ignore"))
            self._dropped = len(shown) - room
            self._size = MAX_BYTES
            return
        self._lines.append(shown.decode())
        self._size += len(shown)

    def text(self) -> str:
        with self._lock:
            text = "".join(self._lines)
            if self._dropped:
                text = f"{text.rstrip(chr(10))}\n{TRUNCATED.format(self._dropped)}\n"
            return text


def _line(record: logging.LogRecord) -> str:
    try:
        message = record.getMessage()
    except Exception as exc:  # noqa: BLE001 - a bad record is kept as such
        message = f"{record.msg!r} (its arguments do not format: {exc!r})"
    when = datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    line = f"{when} {record.levelname} {record.name}: {message}"
    if record.exc_info:
        line += "\n" + _FORMATTER.formatException(record.exc_info)
    elif record.exc_text:
        line += "\n" + record.exc_text
    if record.stack_info:
        line += "\n" + record.stack_info
    return line


class _Handler(logging.Handler):
    """Hands a record to the capture of its context; nothing without one."""

    def handle(self, record: logging.LogRecord) -> bool:
        # No handler lock: records of other threads never wait on each
        # other here (each capture has its own lock).
        capture = _CURRENT.get()
        if capture is None:
            return False
        try:
            capture.add(record)
        except Exception:  # noqa: BLE001 - a log call never fails the task
            self.handleError(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        self.handle(record)


_HANDLER = _Handler()


def _install() -> None:
    """The handler on the root logger (again, if logging was configured
    anew since)."""
    root = logging.getLogger()
    if _HANDLER not in root.handlers:
        with _install_lock:
            if _HANDLER not in root.handlers:
                root.addHandler(_HANDLER)


class _Capturing:
    """The context of one attempt's capture; stores its text at the end."""

    def __init__(self, claimed: ClaimedExecution, capture: _Capture) -> None:
        self._claimed = claimed
        self._capture = capture
        self._token: Token[_Capture | None] | None = None

    def __enter__(self) -> _Capture:
        _install()
        self._token = _CURRENT.set(self._capture)
        return self._capture

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._token is not None:
            _CURRENT.reset(self._token)
        text = self._capture.text()
        if text:
            # An attempt that logged nothing writes nothing.
            _store(self._claimed, text)


def _store(claimed: ClaimedExecution, text: str) -> None:
    """Keep ``text`` with the attempt; a failure is logged, never raised:
    a log is not worth failing a job for."""
    job = claimed.job
    workers = stored_worker_ids(job.worker_ids)
    entry = {
        attempt_logs.ATTEMPT: len(workers),
        attempt_logs.WORKER_ID: str(workers[-1]) if workers else "",
        attempt_logs.TEXT: text,
    }
    logs = attempt_logs.with_entry(job.attempt_logs, entry)
    using = claimed._state.db or "default"
    try:
        # Inside the task's transaction (a test), a savepoint: a failed
        # write must not break it.
        atomic = transaction.atomic(using=using) if connections[using].in_atomic_block else _OFF
        with atomic:
            written = attempt_logs.record(using, claimed.job_id, claimed.pk, logs)
    except DatabaseError as exc:
        logger.warning("Job %s: its attempt's log could not be stored: %s", job.result_id, exc)
        return
    if written:
        job.attempt_logs = logs
