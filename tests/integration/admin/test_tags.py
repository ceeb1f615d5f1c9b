"""Tags in the admin: a filter on the jobs list, the tags on a job's page."""

from __future__ import annotations

import robust_queue
from robust_queue.models import Job
from testproject import coordination_tasks as co
from tests.integration.admin.base import AdminTestCase, changelist, job_url


class TagAdminTests(AdminTestCase):
    def setUp(self) -> None:
        self.login()
        with robust_queue.job_tags("import 42/eu"):
            self.tagged = Job.objects.get(result_id=co.tagged.enqueue(1).id)

    def test_the_filter_lists_recent_tags_and_keeps_only_tagged_jobs(self) -> None:
        page = self.client.get(changelist())
        self.assertContains(page, "By tag")
        self.assertContains(page, "?tag=billing")
        filtered = self.client.get(changelist(tag="billing"))
        self.assertEqual([job.pk for job in filtered.context["cl"].result_list], [self.tagged.pk])

    def test_a_tag_with_spaces_and_slashes_filters_through_its_link(self) -> None:
        page = self.client.get(job_url("change", self.tagged.pk))
        self.assertContains(page, '<td id="rq-job-tags">')
        self.assertContains(page, "?tag=import%2042/eu")
        filtered = self.client.get(changelist(tag="import%2042/eu"))
        self.assertEqual([job.pk for job in filtered.context["cl"].result_list], [self.tagged.pk])

    def test_an_unknown_tag_matches_nothing(self) -> None:
        filtered = self.client.get(changelist(tag="nobody"))
        self.assertEqual(list(filtered.context["cl"].result_list), [])

    def test_an_untagged_job_page_has_no_tags_row(self) -> None:
        page = self.client.get(job_url("change", self.ready.pk))
        self.assertNotContains(page, 'id="rq-job-tags"')

    def test_a_snoozed_job_page_says_so(self) -> None:
        Job.objects.filter(pk=self.scheduled.pk).update(snoozes=2)
        page = self.client.get(job_url("change", self.scheduled.pk))
        self.assertContains(page, '<span class="rq-muted" id="rq-job-snoozes">(2 snoozed)</span>')
