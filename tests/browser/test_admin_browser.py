"""The admin in real headless Chromium: load, filter, retry, pause.

Screenshots go to ``artifacts/screenshots/`` (git-ignored).
"""

from __future__ import annotations

import os
from pathlib import Path

from django.contrib.auth.models import User
from django.contrib.staticfiles.testing import StaticLiveServerTestCase
from playwright.sync_api import Page, sync_playwright

from robust_queue.models import FailedExecution, Job, Pause
from tests.browser.data import seed

CHROMIUM = os.environ.get("ROBUST_QUEUE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


class AdminBrowserTests(StaticLiveServerTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        # Playwright's sync API runs an event loop in this thread; the ORM
        # calls the tests make around it are still synchronous.
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
        super().setUpClass()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        cls.playwright = sync_playwright().start()
        cls.browser = cls.playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.browser.close()
        cls.playwright.stop()
        super().tearDownClass()

    def setUp(self) -> None:
        seed()
        User.objects.create_superuser("admin", password="pw")
        self.context = self.browser.new_context(viewport={"width": 1400, "height": 1000})
        self.addCleanup(self.context.close)
        self.page = self.context.new_page()
        self._login(self.page)

    def _login(self, page: Page) -> None:
        page.goto(f"{self.live_server_url}/admin/login/?next=/admin/")
        page.fill("#id_username", "admin")
        page.fill("#id_password", "pw")
        page.click("input[type=submit]")
        page.wait_for_url(f"{self.live_server_url}/admin/")

    def _shot(self, name: str) -> None:
        self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)

    def test_overview_loads(self) -> None:
        self.page.goto(f"{self.live_server_url}/admin/robust_queue/job/overview/")
        self.assertEqual(self.page.locator("h1").inner_text(), "Queue overview")
        self.assertEqual(self.page.locator("svg.rq-chart").count(), 2)
        self.assertIn("builtins.ValueError", self.page.locator("#rq-failures").inner_text())
        self._shot("overview")

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
        self.assertIn(
            "Paused", self.page.locator("#rq-queues tr", has_text="reports").inner_text()
        )
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
