"""The admin shows jobs waiting on others: "waiting on N jobs" in the
blocked list, the parents linked on the job page."""

from __future__ import annotations

from django.urls import reverse

import robust_queue
from robust_queue.models import Job
from testproject import tasks
from tests.integration.admin.base import AdminTestCase, changelist


class WaitingJobTests(AdminTestCase):
    def setUp(self) -> None:
        self.login(self.viewer)
        self.parents = [tasks.add.enqueue(1, 1), tasks.add.enqueue(2, 2)]
        self.child = robust_queue.enqueue_after(self.parents, tasks.add, (3, 3))

    def test_the_blocked_list_says_how_many_jobs_it_waits_on(self) -> None:
        response = self.client.get(changelist(state="blocked"))
        self.assertContains(response, "waiting on 2 jobs")

    def test_the_job_page_links_the_parents_it_waits_on(self) -> None:
        job = Job.objects.get(result_id=self.child.id)
        response = self.client.get(reverse("admin:robust_queue_job_change", args=[job.pk]))
        self.assertContains(response, "Waiting on other jobs")
        for parent in self.parents:
            pk = Job.objects.get(result_id=parent.id).pk
            url = reverse("admin:robust_queue_job_change", args=[pk])
            self.assertContains(response, f'<a href="{url}">#{pk}</a>', html=True)
        self.assertContains(response, "waiting on 2 jobs")

    def test_a_job_that_waits_on_nothing_has_no_waiting_row(self) -> None:
        job = Job.objects.get(result_id=self.parents[0].id)
        response = self.client.get(reverse("admin:robust_queue_job_change", args=[job.pk]))
        self.assertNotContains(response, "rq-waiting-on")
