"""Discarding a job asks first, even under a strict Content-Security-Policy."""

from __future__ import annotations

from django.conf import settings
from django.test import override_settings

from robust_queue.models import Job
from tests.browser.base import BrowserTestCase
from tests.browser.csp import STRICT_POLICY


@override_settings(
    MIDDLEWARE=[*settings.MIDDLEWARE, "tests.browser.csp.StrictScriptPolicyMiddleware"]
)
class StrictPolicyDiscardTests(BrowserTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.violations: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", self._console)
        self.page.on("dialog", self._dialog)

    def _console(self, message: object) -> None:
        text = str(getattr(message, "text", ""))
        if "Content Security Policy" in text:
            self.violations.append(text)

    def _dialog(self, dialog: object) -> None:
        self.dialogs.append(str(getattr(dialog, "message", "")))
        dialog.dismiss()  # type: ignore[attr-defined]

    def test_discard_asks_before_deleting(self) -> None:
        job = Job.objects.filter(failed_execution__isnull=False).first()
        response = self.page.goto(f"{self.live_server_url}/admin/robust_queue/job/{job.pk}/change/")
        self.assertEqual(response.headers["content-security-policy"], STRICT_POLICY)
        self.page.click("a:has-text('Discard')")
        confirm = self.page.locator("#rq-discard-confirm")
        self.assertIn(f"Discard job #{job.pk}", confirm.inner_text())
        self._shot("discard-confirm")
        self.assertIs(Job.objects.filter(pk=job.pk).exists(), True)
        self.page.click("text=No, take me back")
        self.page.wait_for_url(f"**/job/{job.pk}/change/")
        self.assertIs(Job.objects.filter(pk=job.pk).exists(), True)
        self.page.click("a:has-text('Discard')")
        self.page.click("button:has-text('Yes, discard it')")
        self.page.wait_for_selector(".messagelist")
        self.assertIn("was discarded", self.page.locator(".messagelist").inner_text())
        self.assertIs(Job.objects.filter(pk=job.pk).exists(), False)
        self.assertEqual(self.dialogs, [])
        self.assertEqual(self.violations, [])

    def test_auto_refresh_works_under_the_policy_and_reloads_gently(self) -> None:
        documents: list[str] = []
        self.page.on(
            "request", lambda r: documents.append(r.url) if r.resource_type == "document" else None
        )
        self.page.goto(f"{self.live_server_url}/admin/robust_queue/job/overview/")
        toggle = self.page.locator("#rq-auto-refresh")
        self.assertIs(toggle.is_visible(), True)
        toggle.check()
        with self.page.expect_navigation(timeout=20_000):
            pass
        self.assertIs(self.page.locator("#rq-auto-refresh").is_checked(), True)
        self._shot("overview-auto-refresh")
        # One load, then one reload: ten seconds apart, never a storm.
        self.page.wait_for_timeout(3_000)
        self.assertEqual(len(documents), 2)
        self.assertEqual(self.violations, [])
