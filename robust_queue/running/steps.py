"""Resumable steps: a task body written as named steps.

``steps(context).run(name, function)`` calls ``function(step)`` unless an
earlier attempt of the job finished that step. Each finished step is
written to the job row at once (``Job.steps``, one UPDATE); a checkpoint
(``step.checkpoint(value)``) at most once every ``progress_interval``
seconds, and always when its step raises or the worker stops with the
body still running (``write_pending``). The next attempt — a retry, or a
job given back at a stop — skips the finished steps and gives the step it
stopped in its last checkpoint as ``step.cursor``. Writes are fenced by
the job's claim, as progress is (``progress.py``): once the claim is gone
(the job was given back, pruned or runs elsewhere) nothing is written.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError

from .. import conf
from ..arguments import decode_value, encode_value
from ..compat import TaskContext, TaskResult
from ..exceptions import StepError
from ..models import Job
from . import progress

if TYPE_CHECKING:
    from ..models import ClaimedExecution

logger = logging.getLogger(__name__)

STEP_NAME_MAX_CHARS = 100
# A cursor, not a payload: what a step needs to find its place again.
CHECKPOINT_MAX_BYTES = 64 * 1024

# Claim pk -> the steps of each job running in this process that uses
# them (held by the claim: gone with it).
_OPEN: weakref.WeakValueDictionary[int, Steps] = weakref.WeakValueDictionary()


def steps(context: TaskContext) -> Steps:
    """The steps of the running job (a task declared ``takes_context=True``).

    Outside a Robust Queue worker (a direct call, another backend) every
    step runs and nothing is stored. In a worker, calls within one attempt
    return the same object.
    """
    result = getattr(context, "task_result", None)
    if not isinstance(context, TaskContext) or not isinstance(result, TaskResult):
        raise TypeError(
            f"steps() needs the task's TaskContext (a task declared with "
            f"takes_context=True), not {type(context).__name__}."
        )
    claimed = progress.running_claim(result.id)
    if claimed is None:
        return Steps(result.id, None)
    if _in_event_loop():
        raise StepError("steps() works in a def task only; an async def task cannot use them.")
    # Kept on the claim, which lives as long as the attempt: the row read
    # at the claim is the state of the attempt's start only.
    found: Steps | None = getattr(claimed, "_steps", None)
    if found is None:
        found = Steps(result.id, _Record(claimed))
        claimed._steps = found  # type: ignore[attr-defined]
        _OPEN[claimed.pk] = found
    return found


def write_pending() -> None:
    """Write the checkpoints still waiting for their window, of every job
    running here: the worker stops, its bodies are about to be given back."""
    for open_steps in list(_OPEN.values()):
        if open_steps._record is not None:
            open_steps._record.write_pending()


class Step:
    """The step running now: its ``name``, and its ``cursor`` (the last
    checkpoint saved in it, this attempt or an earlier one; None before)."""

    def __init__(self, steps: Steps, name: str, cursor: Any) -> None:
        self._steps = steps
        self.name = name
        self.cursor = cursor

    def checkpoint(self, value: Any) -> None:
        """Save ``value`` as this step's cursor: a later attempt starts the
        step with it. Encoded as task arguments are (``TypeError`` /
        ``ValueError`` name a value that cannot be; nothing is saved)."""
        self._steps._checkpoint(self, value)

    def __repr__(self) -> str:
        return f"<Step {self.name!r} cursor={self.cursor!r}>"


class Steps:
    """A running job's steps: which are done, and how to run the next."""

    def __init__(self, result_id: str, record: _Record | None) -> None:
        self._result_id = result_id
        self._record = record
        self._done: list[str] = []
        self._resumed: tuple[str | None, Any] = (None, None)
        self._ran: set[str] = set()
        self._current: Step | None = None
        if record is not None:
            self._done, self._resumed = record.load()

    @property
    def done(self) -> tuple[str, ...]:
        """The names of the finished steps, in order, earlier attempts' too."""
        return tuple(self._done)

    def run(self, name: str, function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Call ``function(step, *args, **kwargs)`` as the step ``name`` and
        return its value, unless an earlier attempt finished that step:
        then it is skipped and None is returned."""
        step = self._start(name)
        if step is None:
            return None
        try:
            value = function(step, *args, **kwargs)
        except BaseException:
            self._current = None
            if self._record is not None:
                self._record.write_pending()
            raise
        self._current = None
        self._done.append(name)
        self._resumed = (None, None)
        self._save(None, None, throttled=False)
        return value

    def step(self, name: str) -> Callable[[Callable[[Step], Any]], Any]:
        """``run`` as a decorator: the function runs at once (or is skipped,
        done before) and its name is bound to what it returned."""
        return lambda function: self.run(name, function)

    def _start(self, name: str) -> Step | None:
        _check_name(name)
        if self._current is not None:
            raise StepError(
                f"Step {name!r} cannot start inside step {self._current.name!r}: steps do not nest."
            )
        if name in self._ran:
            raise StepError(f"Step {name!r} already ran in this job: step names are unique.")
        self._ran.add(name)
        if name in self._done:
            return None
        cursor = self._resumed[1] if self._resumed[0] == name else None
        self._current = Step(self, name, cursor)
        return self._current

    def _checkpoint(self, step: Step, value: Any) -> None:
        if self._current is not step:
            raise StepError(
                f"Step {step.name!r} is not running: checkpoint() works inside its function only."
            )
        what = f"The checkpoint of step {step.name!r}"
        encoded = encode_value(value, what)
        size = len(json.dumps(encoded))
        if size > CHECKPOINT_MAX_BYTES:
            raise ValueError(
                f"{what} is {size} bytes as JSON, over the limit of {CHECKPOINT_MAX_BYTES}: "
                "save a cursor (an id, an offset), not the data."
            )
        step.cursor = value
        self._save(step.name, encoded, throttled=True)

    def _save(self, step: str | None, cursor: Any, *, throttled: bool) -> None:
        if self._record is not None:
            state = {"done": list(self._done), "step": step, "cursor": cursor}
            self._record.save(state, throttled=throttled)


class _Record:
    """One running job's stored steps: the claim that fences its writes,
    the time of the last write and the state that waits for the next."""

    def __init__(self, claimed: ClaimedExecution) -> None:
        self._claimed = claimed
        self._using = claimed._state.db or "default"
        self._lock = threading.Lock()
        self._written_at: float | None = None
        self._pending: dict[str, Any] | None = None
        self._gone = False

    def load(self) -> tuple[list[str], tuple[str | None, Any]]:
        """(done, (step, decoded cursor)) as the job row held them when it
        was claimed (the claim reads the column: no query here)."""
        job = self._claimed.job
        state = job.steps
        if state is None:
            return [], (None, None)
        done = state.get("done") if isinstance(state, dict) else None
        if not (isinstance(done, list) and all(isinstance(n, str) for n in done)):
            raise StepError(f"Job {job.result_id}'s stored steps cannot be read: {state!r:.200}")
        step = state.get("step")
        if not isinstance(step, str):
            return done, (None, None)
        return done, (step, decode_value(state.get("cursor"), using=self._using))

    def save(self, state: dict[str, Any], *, throttled: bool) -> None:
        with self._lock:
            if self._gone:
                return
            now = time.monotonic()
            interval = conf.get(conf.PROGRESS_INTERVAL)
            if throttled and self._written_at is not None and now - self._written_at < interval:
                self._pending = state
                return
            self._written_at, self._pending = now, None
        self._write(state)

    def write_pending(self) -> None:
        with self._lock:
            state, self._pending = self._pending, None
        if state is not None and not self._gone:
            self._write(state)

    def _write(self, state: dict[str, Any]) -> None:
        claimed = self._claimed
        try:
            # Inside the task's own transaction, a savepoint: the step is
            # recorded with the task's own writes, or rolled back with them.
            with progress.savepoint_if_atomic(self._using):
                written = Job.objects.using(self._using).record_steps(
                    claimed.job_id, claimed.pk, state
                )
        except DatabaseError as exc:
            # The step is not recorded: it runs again on the next attempt.
            logger.warning("Job %s: its steps could not be written: %s", claimed.job_id, exc)
            return
        if not written:
            self._gone = True


def _check_name(name: Any) -> None:
    if not isinstance(name, str):
        raise TypeError(f"A step's name must be a string, not {type(name).__name__}.")
    if not name or len(name) > STEP_NAME_MAX_CHARS:
        raise ValueError(
            f"A step's name must be 1 to {STEP_NAME_MAX_CHARS} characters, not {name!r}."
        )


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
