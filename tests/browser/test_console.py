"""The operator's console in Chromium (issue 28 §3, §4): Retry / Discard on
each failed row, "Show all" within a state, the failed list at 390 px,
everyone's actions in one place, and quieting a worker from its page.
Screenshots in ``artifacts/screenshots/``."""

from __future__ import annotations

from django.contrib.auth.models import User

from robust_queue.models import FailedExecution, Job, Process, QueueAction
from tests.browser.base import BrowserTestCase
from tests.helpers import make_process

JOBS = "/admin/robust_queue/job/"
ACTIONS = "/admin/robust_queue/queueaction/"
FITS = "document.scrollingElement.scrollWidth <= window.innerWidth"


class ConsoleBrowserTests(BrowserTestCase):
    def _go(self, path: str) -> None:
        response = self.page.goto(f"{self.live_server_url}{path}")
        self.assertEqual(response.status, 200, path)

    def test_retry_on_a_failed_row_goes_back_to_the_list(self) -> None:
        failed = FailedExecution.objects.count()
        job = Job.objects.filter(failed_execution__isnull=False).order_by("-pk").first()
        self._go(f"{JOBS}?state=failed&queue=default")
        self._shot("failed-row-buttons")
        self.page.click(f"button[aria-label='Retry job #{job.pk}']")
        self.page.wait_for_selector(".messagelist")
        self.assertIn(
            f"Job #{job.pk} is ready to run.", self.page.locator(".messagelist").inner_text()
        )
        self.assertTrue(self.page.url.endswith(f"{JOBS}?state=failed&queue=default"))
        self.assertEqual(FailedExecution.objects.count(), failed - 1)
        self.assertEqual(self.page.locator("#result_list tbody tr").count(), failed - 1)
        self.assertEqual(QueueAction.objects.get().verb, "retry")

    def test_discard_on_a_failed_row_asks_first(self) -> None:
        job = Job.objects.filter(failed_execution__isnull=False).order_by("-pk").first()
        self._go(f"{JOBS}?state=failed")
        self.page.click(f"a[aria-label='Discard job #{job.pk}']")
        self.page.wait_for_selector("#rq-discard-confirm")
        self.assertTrue(Job.objects.filter(pk=job.pk).exists())
        self._shot("failed-row-discard-confirm")
        self.page.click("button:has-text('Yes, discard it')")
        self.page.wait_for_selector(".messagelist")
        self.assertTrue(self.page.url.endswith(f"{JOBS}?state=failed"))
        self.assertFalse(Job.objects.filter(pk=job.pk).exists())

    def test_show_all_keeps_the_state(self) -> None:
        self._go(f"{JOBS}?state=failed&q=fail")
        self.page.click("#rq-show-all a")
        self.page.wait_for_url(f"{self.live_server_url}{JOBS}?state=failed")
        self.assertEqual(self.page.locator(".rq-tabs a.selected").inner_text(), "Failed")
        self.assertEqual(
            self.page.locator("#result_list tbody tr").count(),
            FailedExecution.objects.count(),
        )

    def _ids(self) -> list[int]:
        texts = self.page.locator("#result_list tbody th.field-job").all_inner_texts()
        return [int(text.lstrip("#")) for text in texts]

    def test_sorting_by_an_indexed_column(self) -> None:
        self._go(f"{JOBS}?state=failed")
        self.assertIn("Sort by Job, Failed", self.page.locator("#rq-sort-note").inner_text())
        # Oldest failure first, then newest first again.
        self.page.click("#result_list thead th.column-failed_at .text a")
        self.page.wait_for_url("**o=*")
        oldest_first = list(
            FailedExecution.objects.order_by("created_at", "pk").values_list("job_id", flat=True)
        )
        self.assertEqual(self._ids(), oldest_first)
        self.page.click("#result_list thead th.column-failed_at .text a")
        self.page.wait_for_url("**o=-*")
        self.assertEqual(self._ids(), oldest_first[::-1])
        # No link on a column no index serves.
        self.assertEqual(self.page.locator("#result_list thead th.column-task a").count(), 0)

    def test_the_failed_list_at_390_px_shows_exception_and_message(self) -> None:
        self.page.set_viewport_size({"width": 390, "height": 844})
        self._go(f"{JOBS}?state=failed")
        self._shot("mobile-failed-list-cards")
        self.assertTrue(self.page.evaluate(FITS))
        results = self.page.locator("#changelist-form .results")
        inner, box = results.evaluate("e => [e.scrollWidth, e.clientWidth]")
        self.assertLessEqual(inner, box)
        for selector in ("td.field-exception .rq-exception", "td.field-exception .rq-message"):
            cell = self.page.locator(f"#result_list tbody tr:first-child {selector}")
            self.assertTrue(cell.is_visible(), selector)
            left, right = cell.evaluate(
                "e => [e.getBoundingClientRect().left, e.getBoundingClientRect().right]"
            )
            self.assertGreaterEqual(left, 0, selector)
            self.assertLessEqual(right, 390, selector)
        self.assertIn("payment gateway timeout", self.page.locator("#result_list").inner_text())

    def test_everyone_s_actions_on_one_page(self) -> None:
        User.objects.create_user("alice", password="pw", is_staff=True)
        QueueAction.objects.record(
            user_id=None,
            username="alice",
            verb="pause queue",
            message="Paused queue 'x'.",
            queue_name="x",
        )
        job = Job.objects.filter(failed_execution__isnull=False).first()
        self._go(f"{JOBS}{job.pk}/change/")
        self.page.click("button:has-text('Retry')")
        self.page.wait_for_selector(".messagelist")
        self._go(f"{JOBS}overview/")
        self.page.click("#rq-queue-actions-link")
        self.page.wait_for_url(f"**{ACTIONS}")
        table = self.page.locator("#result_list").inner_text()
        self.assertIn("alice", table)
        self.assertIn(f"Retried job #{job.pk}", table)
        self._shot("queue-actions")
        self.page.click("#changelist-filter a:has-text('alice')")
        self.page.wait_for_url("**username=alice*")
        self.assertEqual(self.page.locator("#result_list tbody tr").count(), 1)
        self.page.set_viewport_size({"width": 390, "height": 844})
        self.page.reload()
        self.assertTrue(self.page.evaluate(FITS))

    def test_quiet_a_worker_from_its_page(self) -> None:
        worker = make_process("worker-browser")
        self._go(f"/admin/robust_queue/process/{worker.pk}/change/")
        self.page.click("#rq-process-quiet")
        self.page.wait_for_selector("#rq-process-confirm")
        self._shot("process-quiet-confirm")
        worker.refresh_from_db()
        self.assertIsNone(worker.command)
        self.page.click("button:has-text('Yes, quiet it')")
        self.page.wait_for_selector(".messagelist")
        self.assertIn("quiet asked", self.page.locator("#rq-process-state").inner_text())
        worker.refresh_from_db()
        self.assertEqual(worker.command, "quiet")
        # The worker acts on its heartbeat (tests/processes): then the page says quiet.
        Process.objects.filter(pk=worker.pk).update(command="quieted")
        self.page.reload()
        self.assertEqual(self.page.locator("#rq-process-state").inner_text(), "quiet")
        self.assertEqual(self.page.locator("#rq-process-quiet").count(), 0)
        self.assertEqual(self.page.locator("#rq-process-stop").count(), 1)
        self._shot("process-quiet")
