"""The admin as an operator uses it, in Chromium: confirmations with exact
counts, filters kept across tabs, wide and phone screens, dark mode, the
audit trail and breadcrumbs. Screenshots in ``artifacts/screenshots/``."""

from __future__ import annotations

from unittest import mock

from robust_queue.admin.jobs import bulk
from robust_queue.admin.jobs.job_admin import JobAdmin
from robust_queue.models import FailedExecution, Job
from tests.browser.base import BrowserTestCase
from tests.integration.admin.base import block

JOBS = "/admin/robust_queue/job/"
OVERFLOW = "document.documentElement.scrollWidth"


class OperatorBrowserTests(BrowserTestCase):
    def _go(self, path: str) -> None:
        response = self.page.goto(f"{self.live_server_url}{path}")
        self.assertEqual(response.status, 200, path)

    def test_bulk_discard_asks_with_the_exact_count(self) -> None:
        failed = FailedExecution.objects.count()
        self._go(f"{JOBS}?state=failed")
        self.page.check("#action-toggle")
        self.page.select_option("select[name=action]", "discard_selected")
        self.page.click("button[name=index]")
        self.assertEqual(self.page.locator("#rq-bulk-count").inner_text(), str(failed))
        self._shot("bulk-discard-confirm")
        self.assertEqual(FailedExecution.objects.count(), failed)
        self.page.click(f"button:has-text('Yes, discard {failed} job(s)')")
        self.page.wait_for_selector(".messagelist")
        message = self.page.locator(".messagelist").inner_text()
        self.assertIn(f"Discarded {failed} of {failed}", message)
        self.assertEqual(FailedExecution.objects.count(), 0)
        self._go("/admin/")
        recent = self.page.locator("#recent-actions-module").inner_text()
        self.assertIn(f"Discarded {failed} of {failed}", recent)
        self._shot("recent-actions")

    def test_a_large_bulk_retry_says_where_and_when_it_runs(self) -> None:
        """Past the threshold the operation is a job of its own; the page
        says on which queue it runs next (the live worker polls ``reports``
        first) and behind how many jobs, and so does the message after."""
        failed = FailedExecution.objects.count()
        with (
            mock.patch.object(bulk, "BACKGROUND_ABOVE", 1),
            mock.patch.object(JobAdmin, "list_per_page", 2),
        ):
            self._go(f"{JOBS}?state=failed")
            self.page.check("#action-toggle")
            self.page.click(".actions .question a")  # "Select all N jobs"
            self.page.select_option("select[name=action]", "retry_selected")
            self.page.click("button[name=index]")
            when = "It runs next on queue 'reports': 0 job(s) ahead of it."
            self.assertEqual(self.page.locator("#rq-bulk-when").inner_text(), when)
            self._shot("bulk-retry-on-the-queue")
            self.page.click(f"button:has-text('Yes, retry {failed} job(s)')")
            self.page.wait_for_selector(".messagelist")
        self.assertIn(when, self.page.locator(".messagelist").inner_text())
        operation = Job.objects.get(task_path="robust_queue.admin.bulk_task.bulk_operation")
        self.assertEqual((operation.queue_name, operation.priority), ("reports", 100))
        self.assertEqual(self.page.url, f"{self.live_server_url}{JOBS}{operation.pk}/change/")

    def test_state_tabs_keep_the_filters_and_the_search(self) -> None:
        self._go(f"{JOBS}?queue=default&q=add")
        self.page.click(".rq-tabs >> text=Finished")
        self.page.wait_for_url("**state=finished*")
        url = self.page.url
        for part in ("queue=default", "q=add", "state=finished"):
            self.assertIn(part, url)
        self.assertEqual(self.page.locator("#searchbar").input_value(), "add")

    def test_the_audit_trail_shows_a_retry_on_the_job_page(self) -> None:
        job = Job.objects.filter(failed_execution__isnull=False).first()
        self._go(f"{JOBS}{job.pk}/change/")
        self.page.click("button:has-text('Retry')")
        self.page.wait_for_selector(".messagelist")
        self.assertIn(f"Retried job #{job.pk}", self.page.locator("#rq-audit").inner_text())
        self.assertIn("admin", self.page.locator("#rq-audit").inner_text())

    def test_columns_fit_at_1440_px(self) -> None:
        ready = Job.objects.filter(ready_execution__isnull=False).first()
        assert ready is not None
        block(ready, "testproject.tasks.report/tenant-acme-corporation-eu-west-1/region-7")
        self.page.set_viewport_size({"width": 1440, "height": 900})
        for state in ("", "ready", "blocked", "failed", "scheduled", "claimed", "finished"):
            with self.subTest(state=state):
                self._go(f"{JOBS}?state={state}")
                self.assertLessEqual(self.page.evaluate(OVERFLOW), 1440)
                right = self.page.evaluate(
                    "Math.max(...[...document.querySelectorAll('#result_list th')]"
                    ".map(th => th.getBoundingClientRect().right))"
                )
                self.assertLessEqual(right, 1440)
                self.assertGreater(self.page.locator("#result_list tbody tr").count(), 0)
        self._go(f"{JOBS}?state=failed")
        self._shot("failed-list-1440")
        self._go(f"{JOBS}?state=blocked")
        self._shot("blocked-list-1440")

    def test_the_overview_s_task_figures_and_the_job_page_fit_at_1440_px(self) -> None:
        self.page.set_viewport_size({"width": 1440, "height": 900})
        self._go(f"{JOBS}overview/")
        self.assertLessEqual(self.page.evaluate(OVERFLOW), 1440)
        table = self.page.locator("#rq-top-tasks")
        head = table.locator("thead").inner_text().lower()
        for text in ("throughput", "failure rate", "run p50", "run p95", "wait p50", "wait p95"):
            self.assertIn(text, head)
        windows = table.locator("tbody td:nth-of-type(1)").all_inner_texts()
        self.assertIn("Last hour", windows)
        self.assertIn("Last day", windows)
        # The whole table shows: no scrolling inside its box either.
        inner, box = table.evaluate("e => [e.scrollWidth, e.clientWidth]")
        self.assertLessEqual(inner, box)
        self._shot("overview-1440")
        job = Job.objects.filter(finished_at__isnull=False, started_at__isnull=False).first()
        assert job is not None
        self._go(f"{JOBS}{job.pk}/change/")
        self.assertLessEqual(self.page.evaluate(OVERFLOW), 1440)
        self.assertRegex(self.page.locator("#rq-job-waited").inner_text(), r"^\d+ (ms|s|min)")
        self.assertRegex(self.page.locator("#rq-job-ran-for").inner_text(), r"^\d+ (ms|s|min)")
        self._shot("job-1440")

    def test_no_facet_link_and_a_typed_facets_parameter_is_harmless(self) -> None:
        for path in (JOBS, f"{JOBS}?state=failed", f"{JOBS}?state=finished"):
            with self.subTest(path=path):
                self._go(path)
                self.assertEqual(self.page.locator("a[href*='_facets']").count(), 0)
                self.assertEqual(self.page.get_by_text("Show counts").count(), 0)
        self._go(f"{JOBS}?state=failed")
        rows = self.page.locator("#result_list tbody tr").all_inner_texts()
        self._go(f"{JOBS}?state=failed&_facets=True")
        self.assertEqual(self.page.locator("#result_list tbody tr").all_inner_texts(), rows)
        sidebar = self.page.locator("#changelist-filter").inner_text()
        self.assertNotRegex(sidebar, r"\(\d+\)")  # no facet counts

    def test_no_horizontal_overflow_at_390_px(self) -> None:
        self.page.set_viewport_size({"width": 390, "height": 844})
        job = Job.objects.filter(failed_execution__isnull=False).first()
        for name, path in [
            ("overview", f"{JOBS}overview/"),
            ("failed-list", f"{JOBS}?state=failed"),
            ("job", f"{JOBS}{job.pk}/change/"),
        ]:
            with self.subTest(page=name):
                self._go(path)
                self._shot(f"mobile-{name}")
                self.assertLessEqual(self.page.evaluate(OVERFLOW), 390, name)

    def test_dark_mode(self) -> None:
        self.page.emulate_media(color_scheme="dark")
        self._go(f"{JOBS}overview/")
        background = self.page.evaluate(
            "getComputedStyle(document.querySelector('.rq-card')).backgroundColor"
        )
        channels = [int(c) for c in background[background.index("(") + 1 : -1].split(",")[:3]]
        self.assertLess(sum(channels) / 3, 100, background)
        self._shot("overview-dark")

    def test_breadcrumbs_are_styled(self) -> None:
        for path in (
            f"{JOBS}overview/",
            f"{JOBS}concurrency/",
            f"{JOBS}{Job.objects.first().pk}/change/",
        ):
            with self.subTest(path=path):
                self._go(path)
                crumbs = self.page.locator("nav[aria-label=Breadcrumbs] .breadcrumbs")
                color = crumbs.evaluate("e => getComputedStyle(e).backgroundColor")
                self.assertNotIn(color, ("rgba(0, 0, 0, 0)", "transparent"), path)
                self.assertIn("Robust Queue", crumbs.inner_text())
        self._shot("breadcrumbs")

    def test_the_task_page_from_the_overview(self) -> None:
        self._go(f"{JOBS}overview/")
        link = self.page.locator("#rq-top-tasks tbody a").first
        task_path = link.get_attribute("title")
        link.click()
        self.page.wait_for_url("**/task/**")
        self.assertEqual(self.page.locator("h1").inner_text(), f"Task {task_path}")
        figures = self.page.locator("#rq-task-figures").inner_text().lower()
        for text in ("last hour", "last day", "run p95", "failure rate"):
            self.assertIn(text, figures)
        self.assertEqual(self.page.locator("svg.rq-chart").count(), 1)
        self._shot("task-page")
        self.page.set_viewport_size({"width": 390, "height": 844})
        self.page.reload()
        self.assertLessEqual(self.page.evaluate(OVERFLOW), 390)
        self._shot("mobile-task-page")
