"""Pausing and resuming a task from the admin, with permission."""

from __future__ import annotations

from django.contrib.admin.models import LogEntry
from django.urls import reverse

from robust_queue.models import TaskPause
from tests.integration.admin.base import AdminTestCase, job_url, make_staff

REPORT = "testproject.tasks.report"


def task_url(verb: str) -> str:
    return reverse("admin:robust_queue_task", args=[verb])


class TaskPauseAdminTests(AdminTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.pauser = make_staff("pauser", "view_job", "pause_task")

    def test_the_job_page_pauses_and_resumes_its_task(self) -> None:
        self.login(self.pauser)
        page = self.client.get(job_url("change", self.ready.pk))
        self.assertContains(page, "Pause task")
        self.assertContains(page, task_url("pause"))
        response = self.client.post(
            task_url("pause"), {"task": REPORT, "job": self.ready.pk}, follow=True
        )
        self.assertRedirects(response, job_url("change", self.ready.pk))
        self.assertContains(response, f"Task {REPORT} paused.")
        self.assertContains(response, "Task paused")
        self.assertContains(response, "Resume task")
        self.assertIs(TaskPause.objects.is_paused(REPORT), True)
        self.client.post(task_url("resume"), {"task": REPORT, "job": self.ready.pk})
        self.assertFalse(TaskPause.objects.exists())

    def test_each_change_writes_a_log_entry_on_the_job_page(self) -> None:
        self.login(self.pauser)
        self.client.post(task_url("pause"), {"task": REPORT, "job": self.ready.pk})
        self.client.post(task_url("pause"), {"task": REPORT})  # already: no entry
        self.client.post(task_url("resume"), {"task": REPORT})
        entries = LogEntry.objects.order_by("pk")
        self.assertEqual(
            [(e.user_id, e.object_id, e.change_message) for e in entries],
            [
                (self.pauser.pk, str(self.ready.pk), f"Paused task {REPORT}."),
                (self.pauser.pk, None, f"Resumed task {REPORT}."),
            ],
        )
        page = self.client.get(job_url("change", self.ready.pk))
        self.assertContains(page, f"Paused task {REPORT}.")

    def test_a_view_only_user_sees_no_control_and_a_forged_post_is_refused(self) -> None:
        queue_pauser = make_staff("queue-pauser", "view_job", "pause_queue")
        for user in (self.viewer, queue_pauser):
            with self.subTest(user=user.username):
                self.client.force_login(user)
                page = self.client.get(job_url("change", self.ready.pk))
                self.assertNotContains(page, "Pause task")
                self.assertNotContains(page, task_url("pause"))
                for verb in ("pause", "resume"):
                    forged = self.client.post(task_url(verb), {"task": REPORT})
                    self.assertEqual(forged.status_code, 403)
        self.assertFalse(TaskPause.objects.exists())
        self.assertFalse(LogEntry.objects.exists())

    def test_the_overview_lists_paused_tasks_with_resume_for_those_allowed(self) -> None:
        TaskPause.objects.pause(REPORT)
        overview = reverse("admin:robust_queue_overview")
        self.login(self.pauser)
        page = self.client.get(overview)
        self.assertContains(page, "Paused tasks")
        self.assertContains(page, task_url("resume"))
        self.login(self.viewer)
        page = self.client.get(overview)
        self.assertContains(page, f"<code>{REPORT}</code>")
        self.assertNotContains(page, task_url("resume"))

    def test_a_bad_task_path_is_refused_with_its_reason(self) -> None:
        self.login(self.pauser)
        response = self.client.post(task_url("pause"), {"task": ""}, follow=True)
        self.assertContains(response, "A task path must be a non-empty string")
        response = self.client.post(task_url("pause"), {"task": "x" * 300}, follow=True)
        self.assertContains(response, "is 300 characters long")
        self.assertEqual(self.client.post(task_url("pause")).status_code, 400)
        self.assertEqual(self.client.post(task_url("stop"), {"task": REPORT}).status_code, 404)
        self.assertEqual(self.client.get(task_url("pause")).status_code, 405)
        self.assertFalse(TaskPause.objects.exists())
