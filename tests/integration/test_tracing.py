"""OpenTelemetry spans (``ROBUST_QUEUE["opentelemetry"]``): one PRODUCER span
per enqueued job, a child of the request's span, whose context travels in
the job's metadata; one CONSUMER span per attempt, a child of that enqueue
span, with the attempt's outcome. Off, nothing is traced or imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from unittest import mock

from django.test import SimpleTestCase, TestCase, override_settings
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import robust_queue
from robust_queue import checks
from robust_queue.models import Job
from robust_queue.running.otel import TRACE_KEY
from testproject import renamed_tasks, tasks, traced_tasks
from tests.helpers import work_off

ROOT = Path(__file__).resolve().parents[2]
EXPORTER = InMemorySpanExporter()
# The API's global provider can be set once per process: the SDK's, shared
# with the other tracing tests, each adding its exporter.
if not isinstance(trace.get_tracer_provider(), TracerProvider):
    trace.set_tracer_provider(TracerProvider())
trace.get_tracer_provider().add_span_processor(SimpleSpanProcessor(EXPORTER))  # type: ignore[attr-defined]
REQUEST = trace.get_tracer("tests.request")
ON = {"opentelemetry": True}


def spans(kind: SpanKind) -> list[ReadableSpan]:
    return [span for span in EXPORTER.get_finished_spans() if span.kind is kind]


@override_settings(ROBUST_QUEUE=ON)
class TracingTests(TestCase):
    def setUp(self) -> None:
        EXPORTER.clear()

    def test_an_attempt_is_a_child_of_the_enqueue_span_of_the_request(self) -> None:
        with REQUEST.start_as_current_span("GET /checkout") as request:
            result = tasks.add.enqueue(2, 3)
        job = Job.objects.get(result_id=result.id)
        self.assertIn("traceparent", job.metadata[TRACE_KEY])
        work_off()
        [enqueued] = spans(SpanKind.PRODUCER)
        [attempt] = spans(SpanKind.CONSUMER)
        trace_id = request.get_span_context().trace_id
        self.assertEqual(enqueued.context.trace_id, trace_id)
        self.assertEqual(enqueued.parent.span_id, request.get_span_context().span_id)  # type: ignore[union-attr]
        self.assertEqual(attempt.context.trace_id, trace_id)
        self.assertEqual(attempt.parent.span_id, enqueued.context.span_id)  # type: ignore[union-attr]
        self.assertTrue(attempt.parent.is_remote)  # type: ignore[union-attr]
        self.assertEqual(enqueued.name, "enqueue testproject.tasks.add")
        self.assertEqual(attempt.name, "run testproject.tasks.add")
        common = {
            "messaging.system": "robust_queue",
            "messaging.destination.name": "default",
            "messaging.message.id": result.id,
            "robust_queue.task": "testproject.tasks.add",
            "robust_queue.job.id": job.pk,
            "robust_queue.backend": "default",
        }
        self.assertEqual(
            dict(enqueued.attributes or {}),
            {**common, "messaging.operation.type": "send", "messaging.operation.name": "enqueue"},
        )
        self.assertEqual(
            dict(attempt.attributes or {}),
            {
                **common,
                "messaging.operation.type": "process",
                "messaging.operation.name": "run",
                "robust_queue.attempt": 1,
                "robust_queue.outcome": "successful",
            },
        )
        self.assertIs(attempt.status.status_code, StatusCode.UNSET)

    def test_spans_the_body_opens_are_children_of_its_attempt(self) -> None:
        result = traced_tasks.opens_a_span.enqueue("inside")
        work_off()
        [attempt] = spans(SpanKind.CONSUMER)
        [inside] = [span for span in EXPORTER.get_finished_spans() if span.name == "inside"]
        self.assertEqual(inside.parent.span_id, attempt.context.span_id)  # type: ignore[union-attr]
        self.assertEqual(attempt.attributes["messaging.message.id"], result.id)  # type: ignore[index]
        # The worker thread's context is its own again once the body is done.
        self.assertFalse(trace.get_current_span().get_span_context().is_valid)

    def test_a_failed_attempt_ends_as_an_error_with_its_exception(self) -> None:
        tasks.fail.enqueue("kaput")
        work_off()
        [attempt] = spans(SpanKind.CONSUMER)
        self.assertEqual(attempt.attributes["robust_queue.outcome"], "failed")  # type: ignore[index]
        self.assertEqual(attempt.attributes["error.type"], "builtins.ValueError")  # type: ignore[index]
        self.assertIs(attempt.status.status_code, StatusCode.ERROR)
        [event] = attempt.events
        self.assertEqual(event.name, "exception")
        self.assertEqual(event.attributes["exception.message"], "kaput")  # type: ignore[index]

    def test_each_attempt_of_a_retried_job_is_a_span_under_the_one_enqueue(self) -> None:
        with REQUEST.start_as_current_span("POST /import"):
            result = renamed_tasks.flaky.enqueue("traced-retry")
        work_off()
        work_off()
        self.assertEqual(
            renamed_tasks.flaky.get_result(result.id).return_value, "second attempt of traced-retry"
        )
        [enqueued] = spans(SpanKind.PRODUCER)
        attempts = sorted(
            spans(SpanKind.CONSUMER), key=lambda s: s.attributes["robust_queue.attempt"]
        )  # type: ignore[index]
        self.assertEqual(
            [
                (s.attributes["robust_queue.attempt"], s.attributes["robust_queue.outcome"])
                for s in attempts
            ],  # type: ignore[index]
            [(1, "retried"), (2, "successful")],
        )
        self.assertEqual({s.parent.span_id for s in attempts}, {enqueued.context.span_id})  # type: ignore[union-attr]
        self.assertIs(attempts[0].status.status_code, StatusCode.ERROR)

    def test_enqueue_all_gives_each_job_its_span_and_keeps_user_metadata(self) -> None:
        with robust_queue.job_metadata({"request_id": "r-1"}):
            results = robust_queue.enqueue_all([(tasks.add, (i, 1), {}) for i in range(3)])
        producers = spans(SpanKind.PRODUCER)
        self.assertEqual(
            sorted(s.attributes["messaging.message.id"] for s in producers),  # type: ignore[index]
            sorted(r.id for r in results),
        )
        for job in Job.objects.all():
            self.assertEqual(job.metadata["request_id"], "r-1")
            self.assertIn(TRACE_KEY, job.metadata)
        work_off()
        self.assertEqual(len(spans(SpanKind.CONSUMER)), 3)

    def test_a_job_enqueued_while_tracing_was_off_runs_in_a_root_span(self) -> None:
        with override_settings(ROBUST_QUEUE={}):
            tasks.add.enqueue(1, 1)
        self.assertEqual(EXPORTER.get_finished_spans(), ())
        work_off()
        [attempt] = spans(SpanKind.CONSUMER)
        self.assertIsNone(attempt.parent)


class OffTests(TestCase):
    def setUp(self) -> None:
        EXPORTER.clear()

    def test_off_by_default_no_span_and_no_metadata(self) -> None:
        with REQUEST.start_as_current_span("GET /"):
            result = tasks.add.enqueue(1, 1)
        work_off()
        self.assertEqual([s.name for s in EXPORTER.get_finished_spans()], ["GET /"])
        self.assertEqual(Job.objects.get(result_id=result.id).metadata, {})


class NeverImportedTests(SimpleTestCase):
    def test_off_the_hooks_never_import_opentelemetry(self) -> None:
        script = (
            "import django, sys; django.setup()\n"
            "from robust_queue import backend\n"
            "from robust_queue.running import performing, tracing\n"
            "from robust_queue.models import Job\n"
            "tracing.attempt(Job(task_path='a.b', queue_name='q'))\n"
            "tracing.guarded(None, print)\n"
            "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry', 'robust_queue.running.otel'))))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script],
            cwd=ROOT,
            env={"DJANGO_SETTINGS_MODULE": "testproject.settings", "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=False,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(json.loads(done.stdout.strip().splitlines()[-1].replace("'", '"')), [])

    @override_settings(ROBUST_QUEUE=ON)
    def test_on_without_the_api_package_the_checks_say_what_to_install(self) -> None:
        self.assertEqual(checks._opentelemetry(), [])
        with mock.patch.object(checks, "find_spec", return_value=None):
            [error] = checks._opentelemetry()
        self.assertEqual(error.id, "robust_queue.E023")
        self.assertIn("pip install 'robust-queue[otel]'", error.hint or "")
