"""A running job's progress in Chromium: the running list's column and
the job page (screenshots in ``artifacts/screenshots/``)."""

from __future__ import annotations

from robust_queue.models import Job
from testproject import tasks
from tests.browser.base import BrowserTestCase
from tests.helpers import claim, make_process


class ProgressBrowserTests(BrowserTestCase):
    def test_an_operator_sees_a_running_jobs_progress(self) -> None:
        result = tasks.add.using(queue_name="progress").enqueue(40, 2)
        claim(process=make_process("progress-worker"), queue_name="progress")
        job = Job.objects.get(result_id=result.id, claimed_execution__isnull=False)
        Job.objects.filter(pk=job.pk).update(
            progress={"done": 420, "total": 1000, "note": "rows", "at": None}
        )
        self.page.goto(f"{self.live_server_url}/admin/robust_queue/job/?state=claimed")
        row = self.page.locator("#result_list tbody tr", has_text=f"#{job.pk}")
        self.assertIn("420 / 1,000 — rows", row.inner_text())
        bar = row.locator(".rq-progress progress")
        self.assertEqual(bar.get_attribute("value"), "0.4200")
        self.assertIs(bar.is_visible(), True)
        self._shot("running-progress")
        self.page.goto(f"{self.live_server_url}/admin/robust_queue/job/{job.pk}/change/")
        cell = self.page.locator("#rq-job-progress")
        self.assertEqual(cell.inner_text().strip(), "420 / 1,000 — rows")
        self.assertEqual(cell.locator(".rq-progress").get_attribute("title"), "42%")
        self._shot("job-progress")
