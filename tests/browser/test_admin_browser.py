"""The admin in real headless Chromium: load, filter, retry, pause.

Screenshots go to ``artifacts/screenshots/`` (git-ignored).
"""

from __future__ import annotations

from robust_queue.models import FailedExecution, Job, Pause
from tests.browser.base import SCREENSHOTS, BrowserTestCase


class AdminBrowserTests(BrowserTestCase):
    def test_overview_loads(self) -> None:
        """Also the README's picture: docs/admin-overview.png is this
        screenshot (artifacts/screenshots/admin-overview.png), 1440 px wide."""
        self.page.set_viewport_size({"width": 1440, "height": 900})
        self.page.goto(f"{self.live_server_url}/admin/robust_queue/job/overview/")
        self.assertEqual(self.page.locator("h1").inner_text(), "Queue overview")
        self.assertEqual(self.page.locator("svg.rq-chart").count(), 2)
        self.assertIn("builtins.ValueError", self.page.locator("#rq-failures").inner_text())
        self.assertIn("add", self.page.locator("#rq-top-tasks a").first.inner_text())
        self._shot("overview")
        self.page.screenshot(path=str(SCREENSHOTS / "admin-overview.png"))

    def test_filter_the_failed_list(self) -> None:
        self.page.goto(f"{self.live_server_url}/admin/robust_queue/job/")
        self.page.click(".rq-tabs >> text=Failed")
        self.page.wait_for_url("**state=failed*")
        self.page.click("#changelist-filter >> text=ReturnValueError")
        self.page.wait_for_url("**exception=*")
        rows = self.page.locator("#result_list tbody tr")
        self.assertEqual(rows.count(), 3)
        self.assertIn("ReturnValueError", rows.first.inner_text())
        self._shot("failed-list")

    def test_retry_a_job(self) -> None:
        job = Job.objects.filter(
            failed_execution__isnull=False, task_path="testproject.tasks.fail"
        ).first()
        self.page.goto(f"{self.live_server_url}/admin/robust_queue/job/{job.pk}/change/")
        self.assertIn("payment gateway timeout", self.page.locator("#rq-arguments").inner_text())
        self._shot("job-detail")
        self.page.click("button:has-text('Retry')")
        self.page.wait_for_selector(".messagelist")
        self.assertIn("is ready to run", self.page.locator(".messagelist").inner_text())
        self.assertIs(FailedExecution.objects.filter(job=job).exists(), False)

    def test_pause_a_queue(self) -> None:
        self.page.goto(f"{self.live_server_url}/admin/robust_queue/job/overview/")
        row = self.page.locator("#rq-queues tr", has_text="reports")
        row.locator("button:has-text('Pause')").click()
        self.page.wait_for_selector(".messagelist")
        self.assertIn("Paused", self.page.locator("#rq-queues tr", has_text="reports").inner_text())
        self.assertIs(Pause.objects.filter(queue_name="reports").exists(), True)

    def test_other_pages(self) -> None:
        for name, path in [
            ("processes", "/admin/robust_queue/process/"),
            ("recurring", "/admin/robust_queue/recurringtask/"),
            ("concurrency", "/admin/robust_queue/job/concurrency/"),
            ("jobs", "/admin/robust_queue/job/"),
        ]:
            with self.subTest(page=name):
                response = self.page.goto(f"{self.live_server_url}{path}")
                self.assertEqual(response.status, 200)
                self._shot(name)
