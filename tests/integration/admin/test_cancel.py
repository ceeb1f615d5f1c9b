"""Cancel from the admin: one job (a page asks first), selected rows, and
its own permission."""

from __future__ import annotations

from robust_queue.models import ClaimedExecution, FailedExecution, Job, ReadyExecution
from tests.integration.admin.base import (
    VIEW_PERMISSIONS,
    AdminTestCase,
    changelist,
    job_url,
    make_staff,
)
from tests.integration.admin.test_actions import messages_of

CANCELLED = "robust_queue.exceptions.JobCancelledError"


def last_error(job: Job) -> str:
    return str(Job.objects.get(pk=job.pk).errors[-1]["exception_class_path"])


class OneJobCancelTests(AdminTestCase):
    def setUp(self) -> None:
        self.login()

    def test_the_page_asks_first_then_a_post_cancels_a_waiting_job(self) -> None:
        page = self.client.get(job_url("action", self.ready.pk, "cancel"))
        self.assertContains(page, 'id="rq-cancel-confirm"')
        self.assertContains(page, "It leaves its queue now.")
        self.assertIs(ReadyExecution.objects.filter(job=self.ready).exists(), True)
        response = self.client.post(job_url("action", self.ready.pk, "cancel"), follow=True)
        self.assertIn(f"Job #{self.ready.pk} was cancelled.", messages_of(response))
        self.assertIs(FailedExecution.objects.filter(job=self.ready).exists(), True)
        self.assertEqual(last_error(self.ready), CANCELLED)

    def test_a_running_job_is_asked_to_stop(self) -> None:
        page = self.client.get(job_url("action", self.running.pk, "cancel"))
        self.assertContains(page, "It is running")
        response = self.client.post(job_url("action", self.running.pk, "cancel"), follow=True)
        self.assertIn("its worker will stop it", " ".join(messages_of(response)))
        claim = ClaimedExecution.objects.get(job=self.running)
        self.assertIsNotNone(claim.cancel_requested_at)
        detail = self.client.get(job_url("change", self.running.pk))
        self.assertContains(detail, 'id="rq-cancel-requested"')
        self.assertNotContains(detail, ">Cancel…</a>")

    def test_a_finished_job_is_a_clear_error(self) -> None:
        response = self.client.post(job_url("action", self.finished.pk, "cancel"), follow=True)
        self.assertIn("has already finished", " ".join(messages_of(response)))

    def test_the_button_shows_for_waiting_and_running_jobs_only(self) -> None:
        for job in (self.ready, self.scheduled, self.blocked, self.running):
            with self.subTest(job=job.pk):
                self.assertContains(self.client.get(job_url("change", job.pk)), ">Cancel…</a>")
        for job in (self.finished, self.failed):
            with self.subTest(job=job.pk):
                page = self.client.get(job_url("change", job.pk))
                self.assertNotContains(page, ">Cancel…</a>")

    def test_the_button_needs_the_permission(self) -> None:
        self.client.force_login(make_staff("no-cancel", *VIEW_PERMISSIONS, "discard_job"))
        self.assertNotContains(self.client.get(job_url("change", self.ready.pk)), ">Cancel…</a>")
        self.assertEqual(
            self.client.get(job_url("action", self.ready.pk, "cancel")).status_code, 403
        )
        self.client.force_login(make_staff("canceller", *VIEW_PERMISSIONS, "cancel_job"))
        self.assertContains(self.client.get(job_url("change", self.ready.pk)), ">Cancel…</a>")


class BulkCancelTests(AdminTestCase):
    def setUp(self) -> None:
        self.login()

    def test_cancel_selected_cancels_waiting_asks_running_and_skips_finished(self) -> None:
        selected = [
            self.ready.pk,
            self.scheduled.pk,
            self.blocked.pk,
            self.running.pk,
            self.finished.pk,
            self.failed.pk,
        ]
        data = {"action": "cancel_selected", "_selected_action": selected, "index": 0}
        page = self.client.post(changelist(), data)
        self.assertContains(page, 'id="rq-bulk-confirm"')
        self.assertEqual(page.context["count"], 4)
        confirmed = {
            **data,
            "confirm": "yes",
            "max_pk": page.context["max_pk"],
            "count": page.context["count"],
        }
        response = self.client.post(changelist(), confirmed)
        self.assertIn("Cancelled (or asked to stop) 4 of 4 job(s).", messages_of(response))
        for job in (self.ready, self.scheduled, self.blocked):
            self.assertEqual(last_error(job), CANCELLED)
        self.assertIsNotNone(ClaimedExecution.objects.get(job=self.running).cancel_requested_at)
        self.assertIsNotNone(Job.objects.get(pk=self.finished.pk).finished_at)
