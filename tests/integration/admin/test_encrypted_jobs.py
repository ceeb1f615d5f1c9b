"""The admin shows an @encrypted task's arguments and return value as
"encrypted": it never decrypts them, so no page, search or mask ever holds
the plaintext (the admin's process has the keys here, and still does not)."""

from __future__ import annotations

from cryptography.fernet import Fernet
from django.test import override_settings

from robust_queue.admin.masking.values import shown
from robust_queue.models import Job
from testproject import encrypted_tasks
from tests.helpers import work_off
from tests.integration.admin.base import AdminTestCase, changelist, job_url

SECRET = "s3cret-arg-4111"
KEYS = {
    "encryption_keys": [Fernet.generate_key().decode()],
    "task_modules": ["testproject.encrypted_tasks"],
}


@override_settings(ROBUST_QUEUE=KEYS)
class EncryptedJobsAdminTests(AdminTestCase):
    def test_the_job_page_shows_encrypted_not_the_values(self) -> None:
        result = encrypted_tasks.lookup_secret.enqueue(SECRET)
        work_off()
        job = Job.objects.get(result_id=result.id)
        self.login()
        response = self.client.get(job_url("change", job.pk))
        self.assertEqual(response.status_code, 200)
        self.assertNotContains(response, SECRET)
        self.assertContains(
            response, '<pre class="rq-code" id="rq-arguments">encrypted</pre>', html=True
        )
        self.assertContains(
            response, '<pre class="rq-code" id="rq-return-value">encrypted</pre>', html=True
        )
        page = shown(job)
        self.assertEqual((page.arguments, page.return_value), ("encrypted", "encrypted"))

    def test_lists_and_search_never_hold_the_plaintext(self) -> None:
        result = encrypted_tasks.record_card.enqueue(SECRET, amount=9)
        job = Job.objects.get(result_id=result.id)
        self.login()
        response = self.client.get(changelist())
        self.assertContains(response, f"/{job.pk}/")
        self.assertNotContains(response, SECRET)
        # Search reads the stored text: the ciphertext has no plaintext in it.
        response = self.client.get(changelist(q=SECRET))
        self.assertNotContains(response, f"/{job.pk}/")

    def test_a_unique_key_label_shows_no_argument(self) -> None:
        result = encrypted_tasks.lookup_secret.enqueue(SECRET)
        job = Job.objects.get(result_id=result.id)
        self.login()
        response = self.client.get(job_url("change", job.pk))
        self.assertContains(
            response, 'id="rq-unique-key">unique:testproject.encrypted_tasks.lookup_secret/'
        )
        self.assertNotContains(response, SECRET)
