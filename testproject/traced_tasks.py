"""Tasks and worker hooks for the tracing tests (imported only by them and
by the supervisors they start: it needs OpenTelemetry's SDK)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from robust_queue.compat import task

tracer = trace.get_tracer("testproject.traced_tasks")
# Where a worker started by a test writes its spans, one JSON line each.
SPANS_FILE = "RQ_TEST_SPANS_FILE"


@task()
def opens_a_span(name: str) -> str:
    """Its span is a child of whatever span is current where it runs."""
    with tracer.start_as_current_span(name):
        return name


class FileExporter(SpanExporter):
    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a") as out:
            for span in spans:
                out.write(json.dumps(describe(span)) + "\n")
        return SpanExportResult.SUCCESS


def describe(span: ReadableSpan) -> dict[str, Any]:
    context = span.get_span_context()
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": context.trace_id if context else None,
        "span_id": context.span_id if context else None,
        "parent_span_id": span.parent.span_id if span.parent else None,
        "attributes": dict(span.attributes or {}),
    }


def export_to_file(process: object) -> None:
    """A worker's on_start hook: its spans go to ``$RQ_TEST_SPANS_FILE``."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileExporter(os.environ[SPANS_FILE])))
    trace.set_tracer_provider(provider)
