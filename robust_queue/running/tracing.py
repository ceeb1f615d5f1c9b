"""Tracing hooks: where enqueue and each attempt call a tracer, when one is on.

Off (the default), nothing here imports OpenTelemetry: the backend's write
calls straight through ``traced_enqueue``, ``attempt`` hands ``perform`` the
plain ``attempt_log.Attempt`` and ``guarded`` returns the guard as given;
each is one global read more than no hook. On
(``ROBUST_QUEUE["opentelemetry"] = True``, the ``otel`` extra installed),
``otel.py`` is imported once and:

- each enqueued job gets a span of kind PRODUCER, whose context is put in
  the job's metadata under ``"robust_queue.trace"`` (W3C ``traceparent`` and
  ``tracestate``), so the enqueuing request's trace goes on with the job;
- each attempt gets a span of kind CONSUMER, a child of its job's enqueue
  span (a retry is another child of the same), current while the task body
  runs, so spans the body opens are its children; it ends with the
  attempt's outcome.

Whether it is on is read from the settings once, and again after any
``override_settings``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from django.core.signals import setting_changed

from .. import conf
from ..exceptions import ConfigurationError
from .attempt_log import Attempt

if TYPE_CHECKING:
    from ..models import Job

G = TypeVar("G", bound=Callable[..., Any])
# backend._write: (backend, prepared calls) -> their results.
W = TypeVar("W", bound=Callable[..., Any])


class Tracer(Protocol):
    """What a tracer does at the hooks (``otel.Spans``)."""

    def enqueue(self, backend_alias: str, prepared: Sequence[Any], write: Callable[[], Any]) -> Any:
        """Run ``write()`` (which writes ``prepared``) inside spans of its
        jobs, after putting each span's context in its job's metadata."""

    def attempt(self, job: Job) -> Attempt:
        """The attempt of ``job``, traced."""

    def around(self, attempt: Attempt, guard: G) -> G:
        """``guard``, running the body with ``attempt``'s span current."""


_UNKNOWN: Any = object()
# The tracer; None when off; _UNKNOWN until the settings are read.
_tracer: Tracer | None = _UNKNOWN


def traced_enqueue(write: W) -> W:
    """Decorate the backend's write of prepared calls with enqueue spans."""

    @functools.wraps(write)
    def traced(backend: Any, prepared: Sequence[Any]) -> Any:
        found = _tracer if _tracer is not _UNKNOWN else _load()
        if found is None or not prepared:
            return write(backend, prepared)
        return found.enqueue(backend.alias, prepared, lambda: write(backend, prepared))

    return traced  # type: ignore[return-value]


def attempt(job: Job) -> Attempt:
    """The attempt log of ``job``: traced when tracing is on."""
    found = _tracer if _tracer is not _UNKNOWN else _load()
    return Attempt(job) if found is None else found.attempt(job)


def guarded(attempt: Attempt, guard: G) -> G:
    """``guard`` (which runs a job's body), with the attempt's span current
    while it runs when tracing is on; else ``guard`` itself."""
    found = _tracer if _tracer is not _UNKNOWN else _load()
    return guard if found is None else found.around(attempt, guard)


def _load() -> Tracer | None:
    global _tracer
    if not conf.get(conf.OPENTELEMETRY):
        _tracer = None
        return None
    try:
        # Only when on: a project without the setting never imports OpenTelemetry.
        from . import otel  # noqa: PLC0415
    except ImportError as exc:
        raise ConfigurationError(
            "ROBUST_QUEUE['opentelemetry'] is True but OpenTelemetry cannot be imported "
            f"({exc}): pip install 'robust-queue[otel]'."
        ) from exc
    _tracer = otel.Spans()
    return _tracer


def _settings_changed(**kwargs: Any) -> None:
    # Read again after any change (only tests change settings).
    global _tracer
    _tracer = _UNKNOWN


setting_changed.connect(_settings_changed, dispatch_uid="robust_queue.running.tracing")
