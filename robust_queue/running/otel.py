"""OpenTelemetry spans for enqueue and for each attempt (``tracing.py`` says
when; only imported when ``ROBUST_QUEUE["opentelemetry"]`` is True).

Uses the OpenTelemetry API only: the application installs and configures
the SDK (a ``TracerProvider``, an exporter) as for any other library, and
the propagator set there (W3C trace context by default) carries the
context in the job's metadata. Attribute names follow the messaging
semantic conventions where one fits:

==============================  ============================================
``messaging.system``            ``robust_queue``
``messaging.operation.type``    ``send`` (enqueue), ``process`` (attempt)
``messaging.operation.name``    ``enqueue``, ``run``
``messaging.destination.name``  the queue
``messaging.message.id``        the job's result id
``robust_queue.task``           the task path (as the job row names it)
``robust_queue.job.id``         the job's primary key
``robust_queue.backend``        the backend alias
``robust_queue.attempt``        the attempt, from 1 (attempt spans)
``robust_queue.outcome``        successful, failed, retried, snoozed,
                                skipped (attempt spans)
``error.type``                  the exception class of a failed attempt
==============================  ============================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from .. import __version__
from ..exceptions import Snooze
from ..models.attempt_history import stored_worker_ids
from . import attempt_log
from .attempt_log import Attempt

if TYPE_CHECKING:
    from ..models import Job

G = TypeVar("G", bound=Callable[..., Any])

SYSTEM = "robust_queue"
# The key of Job.metadata that carries the enqueue span's context.
TRACE_KEY = "robust_queue.trace"
# Outcomes that end an attempt's span as an error.
_ERRORS = (attempt_log.FAILED, attempt_log.RETRIED)


class Spans:
    """The tracer behind ``tracing.py``'s hooks."""

    def __init__(self) -> None:
        self.tracer = trace.get_tracer("robust_queue", __version__)

    def enqueue(self, backend_alias: str, prepared: Sequence[Any], write: Callable[[], Any]) -> Any:
        """One PRODUCER span per job, a child of the current span (the
        request's); its context goes in the job's metadata before ``write()``
        stores the jobs; each ends once they are stored."""
        spans: list[Span] = []
        for _, job, *_ in prepared:
            span = self.tracer.start_span(
                f"enqueue {job.task_path}",
                kind=SpanKind.PRODUCER,
                attributes={
                    "messaging.system": SYSTEM,
                    "messaging.operation.type": "send",
                    "messaging.operation.name": "enqueue",
                    "messaging.destination.name": job.queue_name,
                    "messaging.message.id": job.result_id,
                    "robust_queue.task": job.task_path,
                    "robust_queue.backend": backend_alias,
                },
            )
            carrier: dict[str, str] = {}
            propagate.inject(carrier, context=trace.set_span_in_context(span))
            if carrier:
                # A new dict: the field's default may be shared.
                job.metadata = {**(job.metadata or {}), TRACE_KEY: carrier}
            spans.append(span)
        try:
            results = write()
        except BaseException as exc:
            for span in spans:
                _failed(span, exc)
                span.end()
            raise
        for span, (_, job, *_), result in zip(spans, prepared, results, strict=False):
            # A duplicate of a unique job stands for the stored job.
            span.set_attribute("messaging.message.id", str(result.id))
            if job.pk is not None and result.id == job.result_id:
                span.set_attribute("robust_queue.job.id", job.pk)
            span.end()
        return results

    def attempt(self, job: Job) -> Attempt:
        return TracedAttempt(job, self.tracer)

    def around(self, attempt: Attempt, guard: G) -> G:
        if not isinstance(attempt, TracedAttempt):
            return guard
        return attempt.around(guard)


class TracedAttempt(Attempt):
    """An attempt's log lines and its CONSUMER span: started with the
    attempt, a child of the context its job carries, current while the
    body runs (``around``), ended with the outcome."""

    def __init__(self, job: Job, tracer: trace.Tracer) -> None:
        super().__init__(job)
        self._tracer = tracer
        self._span: Span | None = None
        self._error: BaseException | None = None

    def started(self) -> None:
        super().started()
        job = self.job
        metadata = job.metadata if isinstance(job.metadata, dict) else {}
        carrier = metadata.get(TRACE_KEY)
        parent = propagate.extract(carrier) if isinstance(carrier, dict) else None
        self._span = self._tracer.start_span(
            f"run {job.task_path}",
            context=parent,
            kind=SpanKind.CONSUMER,
            attributes={
                "messaging.system": SYSTEM,
                "messaging.operation.type": "process",
                "messaging.operation.name": "run",
                "messaging.destination.name": job.queue_name,
                "messaging.message.id": job.result_id,
                "robust_queue.task": job.task_path,
                "robust_queue.job.id": job.pk,
                "robust_queue.backend": job.backend_alias,
                "robust_queue.attempt": len(stored_worker_ids(job.worker_ids)),
            },
        )

    def around(self, guard: G) -> G:
        span = self._span
        if span is None:
            return guard

        def traced(*args: Any, **kwargs: Any) -> Any:
            token = otel_context.attach(trace.set_span_in_context(span))
            try:
                return guard(*args, **kwargs)
            except BaseException as exc:
                if not isinstance(exc, Snooze):
                    self._error = exc
                raise
            finally:
                otel_context.detach(token)

        return traced  # type: ignore[return-value]

    def finished(self, outcome: str, error: Mapping[str, str] | None = None) -> None:
        super().finished(outcome, error)
        span = self._span
        if span is None:
            return
        self._span = None
        span.set_attribute("robust_queue.outcome", outcome)
        if outcome in _ERRORS:
            if self._error is not None:
                _failed(span, self._error)
            else:
                span.set_status(Status(StatusCode.ERROR, f"attempt {outcome}"))
        span.end()


def _failed(span: Span, exc: BaseException) -> None:
    span.record_exception(exc)
    span.set_attribute("error.type", f"{type(exc).__module__}.{type(exc).__qualname__}")
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"[:200]))
