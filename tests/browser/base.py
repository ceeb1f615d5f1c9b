"""Headless Chromium against a live server, logged in as a superuser.

Screenshots go to ``artifacts/screenshots/<Django x.y>-<db vendor>/``
(git-ignored): CI cells running at once write apart.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import django
from django.contrib.auth.models import User
from django.contrib.staticfiles.testing import StaticLiveServerTestCase
from django.db import connection

from tests.browser.data import seed
from tests.browser.support import CHROMIUM, playwright_or_skip

if TYPE_CHECKING:
    from playwright.sync_api import Page
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


def screenshot_dir() -> Path:
    """This cell's folder: ``<Django major.minor>-<database vendor>``."""
    major, minor = django.VERSION[:2]
    return SCREENSHOTS / f"{major}.{minor}-{connection.vendor}"


class BrowserTestCase(StaticLiveServerTestCase):
    """A seeded queue, a browser context and a logged-in page per test."""

    @classmethod
    def setUpClass(cls) -> None:
        sync_playwright = playwright_or_skip()  # before the server starts
        # Playwright's sync API runs an event loop in this thread; the ORM
        # calls the tests make around it are still synchronous.
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
        super().setUpClass()
        screenshot_dir().mkdir(parents=True, exist_ok=True)
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
        self.page.screenshot(path=str(screenshot_dir() / f"{name}.png"), full_page=True)
