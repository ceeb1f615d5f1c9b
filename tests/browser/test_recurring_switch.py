"""Disabling and enabling a recurring task in Chromium, and pausing a task
from a job's page. Screenshots in ``artifacts/screenshots/``."""

from __future__ import annotations

from django.contrib.admin.models import LogEntry

from robust_queue.models import Job, RecurringTask, TaskPause
from tests.browser.base import BrowserTestCase

RECURRING = "/admin/robust_queue/recurringtask/"


class RecurringSwitchBrowserTests(BrowserTestCase):
    def test_an_operator_disables_and_enables_a_schedule(self) -> None:
        task = RecurringTask.objects.order_by("key").first()
        assert task is not None
        self.page.goto(f"{self.live_server_url}{RECURRING}")
        row = self.page.locator("#result_list tbody tr", has_text=task.key)
        self.assertIn("Enabled", row.inner_text())
        self.assertRegex(row.inner_text(), r"in \d+")
        row.locator("button.rq-switch", has_text="Disable").click()
        self.page.wait_for_selector(".messagelist")
        self.assertIn(
            f"Recurring task {task.key}: disabled.", self.page.locator(".messagelist").inner_text()
        )
        row = self.page.locator("#result_list tbody tr", has_text=task.key)
        self.assertIn("Disabled", row.inner_text())
        self.assertIn("— (disabled)", row.inner_text())
        self._shot("recurring-disabled")
        self.assertIs(RecurringTask.objects.get(pk=task.pk).enabled, False)
        self.page.goto(f"{self.live_server_url}{RECURRING}{task.pk}/change/")
        self.page.click("button.rq-switch:has-text('Enable')")
        self.page.wait_for_selector(".messagelist")
        self.assertIn(f"/recurringtask/{task.pk}/change/", self.page.url)
        self.assertIs(RecurringTask.objects.get(pk=task.pk).enabled, True)
        self._shot("recurring-page-enabled")
        self.page.goto(f"{self.live_server_url}/admin/")
        recent = self.page.locator("#recent-actions-module").inner_text()
        self.assertIn(f"Recurring task {task.key} enabled.", recent)
        self.assertEqual(LogEntry.objects.count(), 2)

    def test_an_operator_pauses_a_task_from_a_job_page(self) -> None:
        job = Job.objects.filter(ready_execution__isnull=False).order_by("pk").first()
        assert job is not None
        self.page.goto(f"{self.live_server_url}/admin/robust_queue/job/{job.pk}/change/")
        self.page.click("button.rq-task-pause:has-text('Pause task')")
        self.page.wait_for_selector("#rq-task-paused")
        self.assertIs(TaskPause.objects.is_paused(job.task_path), True)
        self._shot("task-paused")
        self.page.click("button.rq-task-pause:has-text('Resume task')")
        self.page.wait_for_selector(".messagelist")
        self.assertIs(TaskPause.objects.exists(), False)
