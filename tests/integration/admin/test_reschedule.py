"""The jobs list's "Reschedule" action: asks for a time, needs
``reschedule_job``, moves scheduled and failed jobs, writes LogEntries."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.admin.models import LogEntry
from django.utils import timezone

from robust_queue.admin.jobs import job_reschedule
from robust_queue.models import FailedExecution, ScheduledExecution
from tests.integration.admin.base import VIEW_PERMISSIONS, AdminTestCase, changelist, make_staff
from tests.integration.admin.test_actions import messages_of

ACTION = "reschedule_selected"


class RescheduleActionTests(AdminTestCase):
    def _post(self, selected: list[int], **extra: Any) -> Any:
        data = {"action": ACTION, "_selected_action": selected, "index": 0, **extra}
        return self.client.post(changelist(), data)

    def _at(self) -> tuple[str, Any]:
        local = timezone.localtime() + timedelta(days=3)
        local = local.replace(second=0, microsecond=0)
        return local.strftime("%Y-%m-%dT%H:%M"), local

    def test_the_action_asks_for_a_time_and_changes_nothing(self) -> None:
        self.login()
        page = self._post([self.scheduled.pk, self.failed.pk, self.running.pk])
        self.assertEqual(page.status_code, 200)
        self.assertContains(page, '<strong id="rq-reschedule-count">2</strong>')
        self.assertContains(page, 'type="datetime-local"')
        self.assertTrue(FailedExecution.objects.filter(job=self.failed).exists())

    def test_confirming_moves_scheduled_and_failed_jobs_and_logs_each(self) -> None:
        self.login()
        text, at = self._at()
        response = self._post(
            [self.scheduled.pk, self.failed.pk, self.running.pk], confirm="yes", run_at=text
        )
        self.assertEqual(response.status_code, 302)
        for job in (self.scheduled, self.failed):
            self.assertEqual(ScheduledExecution.objects.get(job=job).scheduled_at, at)
            entry = LogEntry.objects.get(object_id=str(job.pk))
            self.assertIn(f"Rescheduled job #{job.pk}", entry.change_message)
        self.assertFalse(FailedExecution.objects.filter(job=self.failed).exists())
        self.assertIn("Rescheduled 2 of 2 job(s).", messages_of(response))

    def test_a_bad_time_asks_again_and_changes_nothing(self) -> None:
        self.login()
        page = self._post([self.scheduled.pk], confirm="yes", run_at="next tuesday")
        self.assertEqual(page.status_code, 200)
        self.assertContains(page, "Enter a valid date/time.")
        kept = ScheduledExecution.objects.get(job=self.scheduled).scheduled_at
        self.assertEqual(kept, self.scheduled.run_after)
        self.assertFalse(LogEntry.objects.exists())

    def test_the_action_needs_its_permission(self) -> None:
        """A viewer has no such action; a forged POST is refused."""
        self.login(self.viewer)
        page = self.client.get(changelist())
        self.assertNotContains(page, ACTION)
        text, _ = self._at()
        response = self._post([self.scheduled.pk], confirm="yes", run_at=text)
        self.assertEqual(response.status_code, 403)
        allowed = make_staff("rescheduler", *VIEW_PERMISSIONS, "reschedule_job")
        self.login(allowed)
        self.assertContains(self.client.get(changelist()), ACTION)

    def test_too_many_jobs_are_refused_with_a_message(self) -> None:
        self.login()
        job_reschedule_max = job_reschedule.MAX_JOBS
        job_reschedule.MAX_JOBS = 1
        self.addCleanup(setattr, job_reschedule, "MAX_JOBS", job_reschedule_max)
        text, _ = self._at()
        response = self._post([self.scheduled.pk, self.failed.pk], confirm="yes", run_at=text)
        self.assertIn("reschedule at most 1 at a time", " ".join(messages_of(response)))
        self.assertTrue(FailedExecution.objects.filter(job=self.failed).exists())
