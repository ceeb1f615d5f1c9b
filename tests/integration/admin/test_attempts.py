"""Per-attempt history: every attempt with its worker, host, start, end and
outcome, each error with the attempt it really ended."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import TestCase
from django.utils import timezone

from robust_queue.exceptions import ProcessExitError
from robust_queue.models import ClaimedExecution, Job
from robust_queue.models.attempt_history import attempt_of, moment
from robust_queue.running.performing import perform
from testproject import control_tasks, tasks
from tests.helpers import claim
from tests.integration.admin.base import job_url

WORKERS = ("worker-host-a-11-abc123", "worker-host-b-22-def456", "worker-host-c-33-ghi789")


class StampedErrorTests(TestCase):
    def test_a_failure_records_its_attempt_worker_start_and_end(self) -> None:
        result = tasks.fail.enqueue("kaput")
        [claimed] = claim(worker_id=WORKERS[0])
        before = timezone.now()
        perform(claimed)
        job = Job.objects.get(result_id=result.id)
        [record] = job.errors
        self.assertEqual(attempt_of(record), 1)
        self.assertEqual(record["worker_id"], WORKERS[0])
        self.assertEqual(moment(record, "started_at"), job.last_attempted_at)
        ended = moment(record, "ended_at")
        assert ended is not None
        self.assertGreaterEqual(ended, before)
        self.assertEqual(job.failed_execution.error, record)

    def test_a_crashed_worker_s_claim_records_its_attempt_too(self) -> None:
        result = tasks.add.enqueue(1, 2)
        claim(worker_id=WORKERS[1])
        ClaimedExecution.objects.all().fail_all_with(ProcessExitError, "worker 22 exited")
        [record] = Job.objects.get(result_id=result.id).errors
        self.assertEqual((attempt_of(record), record["worker_id"]), (1, WORKERS[1]))
        self.assertIsNotNone(moment(record, "started_at"))


class AttemptHistoryPageTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.user = User.objects.create_superuser("root", password="pw")

    def _three_attempts(self) -> Job:
        """Attempt 1 fails (retried), 2 is released (its worker stopped),
        3 fails for good: two errors, three attempts."""
        result = control_tasks.flaky.enqueue("history", succeed_on=99)
        [first] = claim(worker_id=WORKERS[0])
        perform(first)
        [second] = claim(worker_id=WORKERS[1])
        second.release()
        [third] = claim(worker_id=WORKERS[2])
        perform(third)
        return Job.objects.get(result_id=result.id)

    def test_every_attempt_shows_and_errors_name_their_real_attempt(self) -> None:
        job = self._three_attempts()
        self.assertEqual([attempt_of(e) for e in job.errors], [1, 3])
        self.client.force_login(self.user)
        response = self.client.get(job_url("change", job.pk))
        attempts = response.context["attempts"]
        self.assertEqual(
            [a.outcome for a in attempts],
            ["failed", "ended (released or lost)", "failed, no retry left"],
        )
        for attempt in (attempts[0], attempts[2]):
            self.assertIsNotNone(attempt.started)
            self.assertIsNotNone(attempt.ended)
            self.assertEqual(attempt.exception_class, "builtins.ValueError")
        self.assertEqual((attempts[1].started, attempts[1].ended), (None, None))
        self.assertEqual(
            [a.host for a in attempts], ["host-a (pid 11)", "host-b (pid 22)", "host-c (pid 33)"]
        )
        labels = [(e["label"], e["worker_id"]) for e in response.context["attempt_errors"]]
        self.assertEqual(labels, [("Attempt 1", WORKERS[0]), ("Attempt 3", WORKERS[2])])
        self.assertContains(response, "Attempt 3: builtins.ValueError")
        self.assertContains(response, "attempt 3 fails")
        timeline = [label for _, label in response.context["timeline"]]
        for event in (
            "Attempt 1 started on",
            "Attempt 1 failed",
            "Attempt 3 failed, no retry left",
        ):
            self.assertTrue(any(label.startswith(event) for label in timeline), event)
        self.assertIs(response.context["unrecorded_attempts"], True)

    def test_records_from_before_the_attempt_fields_still_render(self) -> None:
        job = self._three_attempts()
        old = [
            {"exception_class_path": e["exception_class_path"], "traceback": e["traceback"]}
            for e in job.errors
        ]
        Job.objects.filter(pk=job.pk).update(errors=old)
        self.client.force_login(self.user)
        response = self.client.get(job_url("change", job.pk))
        self.assertEqual(response.status_code, 200)
        labels = [e["label"] for e in response.context["attempt_errors"]]
        # Without the fields, errors are matched by position, as before.
        self.assertEqual(labels, ["Attempt 1", "Attempt 2"])
        self.assertEqual(len(response.context["attempts"]), 3)

    def test_a_failure_while_waiting_is_tied_to_no_attempt(self) -> None:
        result = control_tasks.picky.enqueue("value")  # retried in 30 s
        [claimed] = claim(worker_id=WORKERS[0])
        perform(claimed)
        job = Job.objects.get(result_id=result.id)
        job.cancel()
        self.client.force_login(self.user)
        response = self.client.get(job_url("change", job.pk))
        labels = [e["label"] for e in response.context["attempt_errors"]]
        self.assertEqual(labels, ["Attempt 1", "No attempt (the job was waiting)"])
        [attempt] = response.context["attempts"]
        self.assertEqual(attempt.outcome, "failed")

    def test_a_cancel_after_a_released_attempt_is_tied_to_no_attempt(self) -> None:
        """The only error is the cancel: it must not be paired with the
        released attempt by position (as records of old versions are)."""
        result = tasks.add.enqueue(1, 2)
        [claimed] = claim(worker_id=WORKERS[0])
        claimed.release()
        job = Job.objects.get(result_id=result.id)
        job.cancel()
        job.refresh_from_db()
        self.assertEqual([attempt_of(e) for e in job.errors], [None])
        self.client.force_login(self.user)
        response = self.client.get(job_url("change", job.pk))
        labels = [e["label"] for e in response.context["attempt_errors"]]
        self.assertEqual(labels, ["No attempt (the job was waiting)"])
        [attempt] = response.context["attempts"]
        self.assertEqual(attempt.outcome, "ended (released or lost)")
        self.assertEqual(attempt.exception_class, "")

    def test_an_attempt_number_edited_into_text_still_renders(self) -> None:
        job = self._three_attempts()
        Job.objects.filter(pk=job.pk).update(
            errors=[{**job.errors[0], "attempt": "one"}, job.errors[1]]
        )
        self.client.force_login(self.user)
        response = self.client.get(job_url("change", job.pk))
        self.assertEqual(response.status_code, 200)
        labels = [e["label"] for e in response.context["attempt_errors"]]
        self.assertEqual(labels, ["No attempt (the job was waiting)", "Attempt 3"])
