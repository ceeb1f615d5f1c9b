"""Editing a waiting job in Chromium: the job page's Edit button, the form
filled with the job's values, a saved change (screenshot in
``artifacts/screenshots/``)."""

from __future__ import annotations

from robust_queue.models import Job, ReadyExecution
from testproject import tasks
from tests.browser.base import BrowserTestCase


class EditBrowserTests(BrowserTestCase):
    def test_an_operator_edits_a_waiting_job(self) -> None:
        result = tasks.add.enqueue(1, 2)
        job = Job.objects.get(result_id=result.id)
        self.page.goto(f"{self.live_server_url}/admin/robust_queue/job/{job.pk}/change/")
        self.page.click("#rq-edit-link")
        self.page.wait_for_selector("#rq-edit-job")
        self.assertEqual(self.page.input_value("#id_args"), "[1, 2]")
        self.assertEqual(self.page.input_value("#id_queue_name"), "default")
        self.page.fill("#id_args", "[40, 2]")
        self.page.fill("#id_priority", "12")
        self.page.fill("#id_tags", "hand-edited")
        self._shot("job-edit")
        self.page.click("#rq-edit-job button[type=submit]")
        self.page.wait_for_selector("#rq-job-tags")
        self.assertIn("was edited: args, priority, tags", self.page.content())
        job = Job.objects.get(pk=job.pk)
        self.assertEqual((job.args, job.priority, job.tag_names()), ([40, 2], 12, ["hand-edited"]))
        self.assertEqual(ReadyExecution.objects.get(job=job).priority, 12)
