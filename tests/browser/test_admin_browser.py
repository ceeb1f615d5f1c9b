"""The admin in real headless Chromium: load, filter, retry, pause.

Screenshots go to ``artifacts/screenshots/<Django x.y>-<db vendor>/``
(git-ignored).
"""

from __future__ import annotations

import django
from django.db import connection

from robust_queue.models import FailedExecution, Job, Pause
from tests.browser.base import SCREENSHOTS, BrowserTestCase, screenshot_dir


class AdminBrowserTests(BrowserTestCase):
    def test_overview_loads(self) -> None:
        """Also the README's picture: docs/admin-overview.png is this
        screenshot (artifacts/screenshots/<cell>/admin-overview.png), 1440 px
        wide."""
        self.page.set_viewport_size({"width": 1440, "height": 900})
        self.page.goto(f"{self.live_server_url}/admin/robust_queue/job/overview/")
        self.assertEqual(self.page.locator("h1").inner_text(), "Queue overview")
        self.assertEqual(self.page.locator("svg.rq-chart").count(), 2)
        self.assertIn("builtins.ValueError", self.page.locator("#rq-failures").inner_text())
        self.assertIn("add", self.page.locator("#rq-top-tasks a").first.inner_text())
        self._shot("overview")
        self.page.screenshot(path=str(screenshot_dir() / "admin-overview.png"))

    def test_screenshots_go_to_the_folder_of_this_django_line_and_database(self) -> None:
        """CI cells (Django line, database) run at once: each writes its
        screenshots to a folder of its own, none over another's."""
        major, minor = django.VERSION[:2]
        shot = SCREENSHOTS / f"{major}.{minor}-{connection.vendor}" / "cell-check.png"
        shot.unlink(missing_ok=True)
        self.page.goto(f"{self.live_server_url}/admin/")
        self._shot("cell-check")
        self.assertIs(shot.is_file(), True)

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
