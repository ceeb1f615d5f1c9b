"""A job's fair group in the admin: on its page and beside its queue."""

from __future__ import annotations

from robust_queue.models import Job
from testproject import fair_tasks as ft
from tests.integration.admin.base import AdminTestCase, changelist, job_url


class FairGroupAdminTests(AdminTestCase):
    def setUp(self) -> None:
        self.login()
        self.grouped = Job.objects.get(result_id=ft.tenant_job.enqueue("acme <b>").id)
        self.plain = Job.objects.get(result_id=ft.ungrouped_job.enqueue().id)

    def test_the_job_page_shows_the_group(self) -> None:
        page = self.client.get(job_url("change", self.grouped.pk))
        self.assertContains(page, '<td id="rq-job-group">acme &lt;b&gt;</td>', html=False)
        page = self.client.get(job_url("change", self.plain.pk))
        self.assertNotContains(page, 'id="rq-job-group"')

    def test_the_ready_list_shows_the_group_beside_the_queue(self) -> None:
        page = self.client.get(changelist(state="ready"))
        self.assertContains(page, 'title="fair group">· acme &lt;b&gt;</span>', count=1)
