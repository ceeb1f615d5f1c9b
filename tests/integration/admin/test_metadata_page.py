"""The job page shows a job's metadata, masked like its arguments."""

from __future__ import annotations

from django.test import override_settings

import robust_queue
from robust_queue.admin.masking.values import MASK
from robust_queue.models import Job
from testproject import tasks
from tests.integration.admin.base import AdminTestCase, job_url
from tests.integration.admin.test_masking import upper_everything


def enqueue_with_metadata() -> Job:
    with robust_queue.job_metadata({"trace_id": "trace-4711", "auth": {"api_token": "tok-s3cret"}}):
        result = tasks.add.enqueue(1, 2)
    return Job.objects.get(result_id=result.id)


class MetadataPageTests(AdminTestCase):
    def test_metadata_is_shown_with_secret_names_masked(self) -> None:
        job = enqueue_with_metadata()
        self.login()
        response = self.client.get(job_url("change", job.pk))
        self.assertContains(response, 'id="rq-metadata"')
        self.assertContains(response, "trace-4711")
        self.assertNotContains(response, "tok-s3cret")
        self.assertContains(response, f"&quot;api_token&quot;: &quot;{MASK}&quot;")

    @override_settings(ROBUST_QUEUE={"admin_mask": upper_everything})
    def test_a_callable_mask_leaves_the_default_names_masked(self) -> None:
        job = enqueue_with_metadata()
        self.login()
        response = self.client.get(job_url("change", job.pk))
        self.assertContains(response, "trace-4711")
        self.assertNotContains(response, "tok-s3cret")

    @override_settings(ROBUST_QUEUE={"admin_mask": []})
    def test_masking_off_shows_everything(self) -> None:
        job = enqueue_with_metadata()
        self.login()
        self.assertContains(self.client.get(job_url("change", job.pk)), "tok-s3cret")

    def test_a_job_without_metadata_has_no_section(self) -> None:
        job = Job.objects.get(result_id=tasks.add.enqueue(1, 2).id)
        self.login()
        self.assertNotContains(self.client.get(job_url("change", job.pk)), 'id="rq-metadata"')

    def test_hand_edited_metadata_still_renders(self) -> None:
        job = Job.objects.get(result_id=tasks.add.enqueue(1, 2).id)
        Job.objects.filter(pk=job.pk).update(metadata=["not", "a", "dict"])
        self.login()
        response = self.client.get(job_url("change", job.pk))
        self.assertEqual(response.status_code, 200)
        self.assertContains(response, "&quot;not&quot;")
