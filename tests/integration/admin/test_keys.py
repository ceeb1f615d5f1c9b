"""Concurrency and unique keys in the admin: shown masked, found through
indexes, and never a way to confirm a guessed secret."""

from __future__ import annotations

import hashlib

from django.test import override_settings
from django.urls import reverse

from robust_queue import enqueue_once
from robust_queue.models import FailedExecution, Job, UniqueKey
from testproject import tasks
from tests.integration.admin.base import AdminTestCase, block, changelist, job_url

SECRET = "s3cret-value"
SECRET_KEY = f"testproject.tasks.echo/{SECRET}"


class ConcurrencyKeyFilterTests(AdminTestCase):
    def setUp(self) -> None:
        job = Job.objects.get(result_id=tasks.echo.enqueue(password=SECRET).id)
        self.secret_job = block(job, SECRET_KEY)
        self.login(self.viewer)

    def _listed(self, **params: str) -> list[int]:
        response = self.client.get(changelist(**params))
        self.assertEqual(response.status_code, 200)
        return [job.pk for job in response.context["cl"].result_list]

    def test_a_typed_key_that_shows_masked_matches_nothing(self) -> None:
        """A right guess and a wrong one look the same."""
        self.assertEqual(self._listed(concurrency_key=SECRET_KEY), [])
        self.assertEqual(self._listed(concurrency_key=SECRET_KEY + "x"), [])
        self.assertEqual(self._listed(state="blocked", concurrency_key=SECRET_KEY), [])

    def test_a_masked_key_is_reached_through_a_job_of_it(self) -> None:
        self.assertEqual(self._listed(key_of=str(self.secret_job.pk)), [self.secret_job.pk])
        self.assertEqual(
            self._listed(state="blocked", key_of=str(self.secret_job.pk)), [self.secret_job.pk]
        )
        self.assertEqual(self._listed(key_of=str(self.finished.pk)), [])  # no key
        self.assertEqual(self._listed(key_of="nope"), [])

    def test_an_unmasked_key_is_found_by_typing_it(self) -> None:
        self.assertEqual(self._listed(concurrency_key="key-1"), [self.blocked.pk])

    @override_settings(ROBUST_QUEUE={"admin_mask": []})
    def test_with_masking_off_every_key_is_found_by_typing_it(self) -> None:
        self.assertEqual(self._listed(concurrency_key=SECRET_KEY), [self.secret_job.pk])

    def test_the_blocked_list_links_each_key_to_its_semaphore(self) -> None:
        page = self.client.get(changelist(state="blocked"))
        url = reverse("admin:robust_queue_concurrency")
        self.assertContains(page, f"{url}?job={self.secret_job.pk}#rq-key")
        self.assertNotContains(page, SECRET)

    def test_the_concurrency_page_shows_one_job_s_key(self) -> None:
        url = reverse("admin:robust_queue_concurrency")
        page = self.client.get(f"{url}?job={self.secret_job.pk}")
        self.assertEqual(
            [row["first_job"] for row in page.context["blocked_keys"]], [self.secret_job.pk]
        )
        self.assertContains(page, 'id="rq-key"')
        self.assertContains(page, "testproject.tasks.echo/********")
        self.assertNotContains(page, SECRET)
        page = self.client.get(f"{url}?job={self.finished.pk}")
        self.assertEqual(page.context["blocked_keys"], [])
        self.assertContains(page, "has no concurrency key")


class ErrorSearchMaskingTests(AdminTestCase):
    """A secret in a traceback cannot be confirmed by searching for it."""

    def setUp(self) -> None:
        traceback = f"Traceback...\nValueError: password={SECRET} rejected"
        error = {"exception_class_path": "builtins.ValueError", "traceback": traceback}
        Job.objects.filter(pk=self.failed.pk).update(
            errors=[error], arguments={"args": [], "kwargs": {"password": SECRET}}
        )
        FailedExecution.objects.filter(job=self.failed).update(error=error)
        self.login(self.viewer)

    def _found(self, term: str) -> list[int]:
        response = self.client.get(changelist(state="failed", q=term))
        return [job.pk for job in response.context["cl"].result_list]

    def test_with_masking_on_the_traceback_is_not_searched(self) -> None:
        self.assertEqual(self._found(SECRET), [])
        self.assertEqual(self._found("ValueError"), [self.failed.pk])  # the class still is
        page = self.client.get(job_url("change", self.failed.pk))
        self.assertNotContains(page, SECRET)

    @override_settings(ROBUST_QUEUE={"admin_mask": []})
    def test_with_masking_off_it_is(self) -> None:
        self.assertEqual(self._found(SECRET), [self.failed.pk])


class UniqueKeyTests(AdminTestCase):
    def setUp(self) -> None:
        self.login(self.viewer)

    def _job(self, result_id: str) -> Job:
        return Job.objects.get(result_id=result_id)

    def test_the_job_page_shows_its_unique_key_and_the_key_finds_the_job(self) -> None:
        job = self._job(enqueue_once(tasks.add, "invoice-42", 1, 2).id)
        label = "once:testproject.tasks.add/invoice-42"
        page = self.client.get(job_url("change", job.pk))
        self.assertContains(page, 'id="rq-unique-key"')
        self.assertContains(page, label)
        for value in (label, hashlib.sha256(label.encode()).hexdigest()):
            with self.subTest(value=value):
                response = self.client.get(changelist(unique_key=value))
                self.assertEqual([j.pk for j in response.context["cl"].result_list], [job.pk])
        response = self.client.get(changelist(q=label))
        self.assertEqual([j.pk for j in response.context["cl"].result_list], [job.pk])
        response = self.client.get(changelist(unique_key="once:nothing/here"))
        self.assertEqual(list(response.context["cl"].result_list), [])

    def test_a_key_built_from_a_secret_shows_masked_and_is_not_found_by_typing(self) -> None:
        job = self._job(tasks.echo.enqueue(password=SECRET).id)
        label = f'unique:testproject.tasks.echo/{{"password":"{SECRET}"}}'
        UniqueKey.objects.create(
            key_hash=hashlib.sha256(label.encode()).hexdigest(),
            key=label,
            result_id=job.result_id,
        )
        page = self.client.get(job_url("change", job.pk))
        self.assertContains(page, 'id="rq-unique-key"')
        self.assertNotContains(page, SECRET)
        for params in ({"unique_key": label}, {"q": label}):
            response = self.client.get(changelist(**params))
            self.assertEqual(list(response.context["cl"].result_list), [], params)
