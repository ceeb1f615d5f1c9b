"""Counts past the cap in Chromium (issue 28 §2): the overview's cards show
"≈" figures (the planner's estimate on PostgreSQL, the statistics' count of
finished jobs everywhere) or "more than N", and the page says why; the
failed list says of how many it shows the newest. The cap is lowered to 5
so the browser seed is past it."""

from __future__ import annotations

from unittest import mock

from django.db import connection

from robust_queue.operations import counting
from tests.browser.base import BrowserTestCase

JOBS = "/admin/robust_queue/job/"
CAP = 5


class CountsBrowserTests(BrowserTestCase):
    def setUp(self) -> None:
        super().setUp()
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        patcher = mock.patch.object(counting, "DEFAULT_COUNT_CAP", CAP)
        patcher.start()
        self.addCleanup(patcher.stop)

    def _go(self, path: str) -> None:
        response = self.page.goto(f"{self.live_server_url}{path}")
        self.assertEqual(response.status, 200, path)

    def _card(self, label: str) -> str:
        card = self.page.locator(".rq-card", has_text=label).first
        return card.locator(".rq-count").inner_text()

    def test_the_overview_shows_estimates_and_says_what_they_are(self) -> None:
        self._go(f"{JOBS}overview/")
        ready = self._card("Ready")
        if connection.vendor == "postgresql":
            self.assertRegex(ready, r"^≈\d")
        else:
            self.assertEqual(ready, f"more than {CAP}")
        self.assertRegex(self._card("Finished, last day"), r"^≈\d")
        note = self.page.locator("#rq-counts-capped").inner_text()
        self.assertIn(f"Counts are exact up to {CAP}", note)
        self.assertIn("“≈” marks an estimate", note)
        title = self.page.locator(".rq-card", has_text="Ready").locator(".rq-count")
        explained = title.get_attribute("title") or ""
        if connection.vendor == "postgresql":  # an estimate past the cap
            self.assertIn(f"Counted exactly up to {CAP}; past it,", explained)
        else:  # no estimate: the count stops at the cap
            self.assertIn(f"Counting stops at {CAP}", explained)
        self._shot("overview-counts-past-the-cap")

    def test_the_failed_list_says_of_how_many_it_shows_the_newest(self) -> None:
        self._go(f"{JOBS}?state=failed")
        note = self.page.locator("#rq-cap-note").inner_text()
        if connection.vendor == "postgresql":
            self.assertRegex(note, rf"^Showing the newest {CAP} of ≈\d")
        else:
            self.assertTrue(note.startswith(f"Showing the newest {CAP} of more than {CAP}"), note)
        self._shot("failed-list-past-the-cap")
