"""Tracing through a real supervisor: the forked worker's attempt spans are
children of the enqueue spans made in this process, one per attempt."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from django.test import TransactionTestCase, override_settings
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from robust_queue.models import Job
from testproject import renamed_tasks, tasks, traced_tasks
from tests.helpers import wait_until
from tests.processes.support import Supervisor

EXPORTER = InMemorySpanExporter()
if not isinstance(trace.get_tracer_provider(), TracerProvider):
    trace.set_tracer_provider(TracerProvider())
PROVIDER = trace.get_tracer_provider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))  # type: ignore[attr-defined]
REQUEST = trace.get_tracer("tests.request")


def finished(result_id: str) -> bool:
    """Finished, or failed for good."""
    jobs = Job.objects.filter(result_id=result_id)
    return (
        jobs.filter(finished_at__isnull=False).exists()
        or jobs.filter(failed_execution__isnull=False).exists()
    )


@override_settings(ROBUST_QUEUE={"opentelemetry": True})
class TracedSupervisorTests(TransactionTestCase):
    def test_a_worker_s_attempt_spans_join_the_request_s_trace(self) -> None:
        EXPORTER.clear()
        with REQUEST.start_as_current_span("POST /orders") as request:
            ok = tasks.add.enqueue(1, 2)
            failing = tasks.fail.enqueue("kaput")
            retried = renamed_tasks.flaky.enqueue("worker-retry")
        producers = {
            span.attributes["messaging.message.id"]: span  # type: ignore[index]
            for span in EXPORTER.get_finished_spans()
            if span.kind is SpanKind.PRODUCER
        }
        out = Path(tempfile.mkdtemp()) / "spans.jsonl"
        Supervisor(
            self,
            env={traced_tasks.SPANS_FILE: str(out)},
            opentelemetry=True,
            task_modules=["testproject.renamed_tasks", "testproject.traced_tasks"],
            hooks={"worker": {"on_start": ["testproject.traced_tasks.export_to_file"]}},
        )
        wait_until(lambda: all(finished(r.id) for r in (ok, failing, retried)), timeout=60)
        wait_until(lambda: out.exists() and len(out.read_text().splitlines()) >= 4, timeout=10)
        attempts = [json.loads(line) for line in out.read_text().splitlines()]
        self.assertEqual({a["kind"] for a in attempts}, {"CONSUMER"})
        trace_id = request.get_span_context().trace_id
        outcomes = []
        for attempt in attempts:
            attributes = attempt["attributes"]
            enqueued = producers[attributes["messaging.message.id"]]
            self.assertEqual(attempt["trace_id"], trace_id)
            self.assertEqual(attempt["parent_span_id"], enqueued.context.span_id)
            outcomes.append(
                (
                    attributes["robust_queue.task"],
                    attributes["robust_queue.attempt"],
                    attributes["robust_queue.outcome"],
                )
            )
        self.assertEqual(
            sorted(outcomes),
            [
                ("testproject.renamed_tasks.flaky", 1, "retried"),
                ("testproject.renamed_tasks.flaky", 2, "successful"),
                ("testproject.tasks.add", 1, "successful"),
                ("testproject.tasks.fail", 1, "failed"),
            ],
        )
