"""The admin lists batches with their progress, and a batch's page shows
its counts, properties, callbacks and jobs; view-only, for those who may
view batches."""

from __future__ import annotations

from django.test import TestCase
from django.urls import reverse

import robust_queue
from robust_queue.models import Batch, Job
from testproject import tasks
from tests.helpers import work_off
from tests.integration.admin.base import make_staff


class BatchAdminTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.viewer = make_staff("batch-viewer", "view_batch")
        with robust_queue.batch(
            on_finish=tasks.record, description="CSV import", properties={"user": 42}
        ) as batch:
            tasks.add.enqueue(1, 1)
            tasks.fail.enqueue("boom")
        work_off()
        tasks.add.enqueue(2, 2)  # not in the batch, still to run
        with robust_queue.batch(description="later"):
            tasks.report.enqueue(3)
        cls.batch = Batch.get(batch.batch_id)

    def setUp(self) -> None:
        self.client.force_login(self.viewer)

    def test_the_list_shows_each_batch_with_its_progress(self) -> None:
        response = self.client.get(reverse("admin:robust_queue_batch_changelist"))
        self.assertContains(response, "CSV import")
        self.assertContains(response, "later")
        self.assertContains(response, 'value="100"')
        self.assertContains(response, "2 / 0 / 1 / 1")
        self.assertContains(response, "1 / 1 / 0 / 0")

    def test_the_page_shows_counts_properties_callbacks_and_jobs(self) -> None:
        response = self.client.get(reverse("admin:robust_queue_batch_change", args=[self.batch.pk]))
        self.assertContains(response, "on_finish: testproject.tasks.record")
        self.assertContains(response, "&quot;user&quot;: 42")
        for job in Job.objects.filter(batch_member__batch=self.batch):
            url = reverse("admin:robust_queue_job_change", args=[job.pk])
            self.assertContains(response, f'href="{url}"')
        self.assertNotContains(response, "testproject.tasks.report")

    def test_batches_cannot_be_added_changed_or_deleted(self) -> None:
        self.client.force_login(type(self.viewer).objects.create_superuser("root", password="pw"))
        self.assertEqual(self.client.get(reverse("admin:robust_queue_batch_add")).status_code, 403)
        delete = reverse("admin:robust_queue_batch_delete", args=[self.batch.pk])
        self.assertEqual(self.client.post(delete).status_code, 403)
        self.assertTrue(Batch.objects.filter(pk=self.batch.pk).exists())

    def test_staff_without_the_view_permission_see_nothing(self) -> None:
        self.client.force_login(make_staff("nobody"))
        response = self.client.get(reverse("admin:robust_queue_batch_changelist"))
        self.assertEqual(response.status_code, 403)
