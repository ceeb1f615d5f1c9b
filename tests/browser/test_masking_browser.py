"""Secrets stay hidden in Chromium: the job page of a failed job whose
arguments, error, traceback and metadata carry each kind of secret, its
folded traceback unfolded, and the failed list's search (issue 28 §1, §4).
Screenshots in ``artifacts/screenshots/``."""

from __future__ import annotations

from robust_queue.models import Job
from testproject import tasks
from tests.browser.base import BrowserTestCase
from tests.integration.admin.test_masking_everywhere import (
    HARMLESS,
    HIDDEN,
    MESSAGE,
    secret_kwargs,
)

JOBS = "/admin/robust_queue/job/"


class MaskingBrowserTests(BrowserTestCase):
    def setUp(self) -> None:
        # Enqueued before the seed, whose workers run it.
        self.failed = Job.objects.get(result_id=tasks.fail.enqueue(MESSAGE).id)
        Job.objects.filter(pk=self.failed.pk).update(metadata=secret_kwargs())
        super().setUp()
        self.ready = Job.objects.get(result_id=tasks.echo.enqueue(**secret_kwargs()).id)

    def assert_hidden(self) -> None:
        html, text = self.page.content(), self.page.inner_text("body")
        for hidden in HIDDEN:
            with self.subTest(url=self.page.url, hidden=hidden):
                self.assertNotIn(hidden, html)
                self.assertNotIn(hidden, text)

    def test_the_failed_job_page_unfolded_shows_no_secret(self) -> None:
        self.page.goto(f"{self.live_server_url}{JOBS}{self.failed.pk}/change/")
        folded = self.page.locator("#rq-errors details.rq-queue-frames")
        self.assertGreater(folded.count(), 0)
        self.assertRegex(
            folded.first.locator("summary").inner_text(), r"^\d+ frames? of the queue$"
        )
        # Folded: the queue's frames are not in sight, the task's frame is.
        self.assertFalse(folded.first.locator("pre").is_visible())
        self.assertIn("testproject/tasks.py", self.page.inner_text("#rq-errors"))
        for index in range(folded.count()):
            folded.nth(index).locator("summary").click()
        self.assertTrue(folded.first.locator("pre").is_visible())
        self.assertIn("robust_queue/running/performing.py", self.page.inner_text("#rq-errors"))
        self.assertIn("upstream refused: token=********", self.page.inner_text("#rq-errors"))
        self.assertIn("********", self.page.inner_text("#rq-metadata"))
        self.assert_hidden()
        self._shot("masking-failed-job-unfolded")

    def test_a_job_page_and_the_failed_search_show_no_secret(self) -> None:
        self.page.goto(f"{self.live_server_url}{JOBS}{self.ready.pk}/change/")
        arguments = self.page.inner_text("#rq-arguments")
        self.assertIn(HARMLESS, arguments)  # a parameter named "key" shows
        self.assert_hidden()
        self.page.goto(f"{self.live_server_url}{JOBS}?state=failed&q=refused")
        # The message's last line, masked.
        self.assertIn("postgres://app:********@db/app", self.page.inner_text("#result_list"))
        self.assert_hidden()
        self._shot("masking-failed-search")
