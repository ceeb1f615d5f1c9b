"""ROBUST_QUEUE["admin_mask"] hides secrets in arguments and return values."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from robust_queue.admin.masking.values import MASK, displayed
from robust_queue.models import Job, RecurringTask, Semaphore
from testproject import tasks
from tests.helpers import work_off
from tests.integration.admin.base import AdminTestCase, block, job_url


def upper_everything(task_path: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"args": ["hidden by callable"], "kwargs": {}, "return_value": task_path}


def broken(task_path: str, data: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError("bug in the mask")


class MaskingTests(AdminTestCase):
    def _job(self, result: Any) -> Job:
        return Job.objects.get(result_id=result.id)

    @override_settings(ROBUST_QUEUE={"admin_mask": ["b", "password", "rows"]})
    def test_names_mask_positional_keyword_and_nested_values(self) -> None:
        job = self._job(tasks.add.enqueue(1, 2))
        self.assertEqual(displayed(job)["args"], [1, MASK])
        job = self._job(tasks.echo.enqueue(config={"password": "s3cret", "user": "bob"}))
        self.assertEqual(displayed(job)["kwargs"], {"config": {"password": MASK, "user": "bob"}})
        job = self._job(tasks.report.enqueue(2))
        work_off()
        job.refresh_from_db()
        self.assertEqual(displayed(job)["return_value"], {"report": 2, "rows": MASK})

    @override_settings(ROBUST_QUEUE={"admin_mask": ["password"]})
    def test_job_page_never_shows_a_masked_value(self) -> None:
        job = self._job(tasks.echo.enqueue(password="s3cret-value"))
        self.login()
        response = self.client.get(job_url("change", job.pk))
        self.assertNotContains(response, "s3cret-value")
        self.assertContains(response, MASK)

    @override_settings(ROBUST_QUEUE={"admin_mask": ["password"]})
    def test_positional_values_of_an_unknown_task_are_all_masked(self) -> None:
        job = self._job(tasks.add.enqueue(1, 2))
        Job.objects.filter(pk=job.pk).update(task_path="gone.module.task")
        job.refresh_from_db()
        self.assertEqual(displayed(job)["args"], [MASK, MASK])

    @override_settings(ROBUST_QUEUE={"admin_mask": upper_everything})
    def test_callable_decides(self) -> None:
        job = self._job(tasks.add.enqueue(1, 2))
        self.assertEqual(
            displayed(job),
            {
                "args": ["hidden by callable"],
                "kwargs": {},
                "return_value": "testproject.tasks.add",
            },
        )

    @override_settings(
        ROBUST_QUEUE={"admin_mask": "tests.integration.admin.test_masking.upper_everything"}
    )
    def test_callable_by_dotted_path(self) -> None:
        job = self._job(tasks.add.enqueue(1, 2))
        self.assertEqual(displayed(job)["args"], ["hidden by callable"])

    @override_settings(ROBUST_QUEUE={"admin_mask": broken})
    def test_a_broken_callable_hides_everything(self) -> None:
        job = self._job(tasks.add.enqueue(1, 2))
        with self.assertLogs("robust_queue.admin.masking.values", "ERROR"):
            self.assertEqual(displayed(job), {"args": [MASK], "kwargs": {}, "return_value": MASK})

    def test_no_setting_masks_the_default_names_only(self) -> None:
        job = self._job(tasks.add.enqueue(1, 2))
        self.assertEqual(displayed(job)["args"], [1, 2])


def leaky(task_path: str, data: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError(f"cannot mask {data}")


TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "x.py", line 1, in login\n'
    "ValueError: login refused for s3cret-value; api_token=tok-abcdef "
    "Authorization: Bearer eyJhbGciOi url=postgres://app:pw-9876@db/app\n"
)


class NamePatternTests(AdminTestCase):
    """Names match case-insensitively, as words, globs or regexes."""

    def _kwargs(self, **kwargs: Any) -> dict[str, Any]:
        job = Job.objects.get(result_id=tasks.echo.enqueue(**kwargs).id)
        return displayed(job)["kwargs"]

    def test_default_list_catches_how_secrets_are_named(self) -> None:
        shown = self._kwargs(
            api_token="t",
            PASSWORD="p",
            db_password="d",
            Authorization="a",
            session_cookie="c",
            card_number="n",
            aws_secret_access_key="k",
            user="bob",
            nested={"X-Api-Key": "k", "items": [{"refresh_token": "r", "id": 3}]},
        )
        self.assertEqual(
            shown,
            {
                "api_token": MASK,
                "PASSWORD": MASK,
                "db_password": MASK,
                "Authorization": MASK,
                "session_cookie": MASK,
                "card_number": MASK,
                "aws_secret_access_key": MASK,
                "user": "bob",
                "nested": {"X-Api-Key": MASK, "items": [{"refresh_token": MASK, "id": 3}]},
            },
        )

    @override_settings(ROBUST_QUEUE={"admin_mask": ["PASS", "ssn_*", re.compile(r"^pin$")]})
    def test_words_glob_and_regex(self) -> None:
        """A plain pattern is whole words of the name, not a substring."""
        shown = self._kwargs(
            db_pass="x", db_passphrase="y", ssn_last4="1", my_ssn_x="2", pin="3", spin="4"
        )
        self.assertEqual(
            shown,
            {
                "db_pass": MASK,
                "db_passphrase": "y",
                "ssn_last4": MASK,
                "my_ssn_x": "2",
                "pin": MASK,
                "spin": "4",
            },
        )

    @override_settings(ROBUST_QUEUE={"admin_mask": []})
    def test_an_empty_list_masks_nothing(self) -> None:
        self.assertEqual(self._kwargs(password="p"), {"password": "p"})

    @override_settings(ROBUST_QUEUE={"admin_mask": ["password", 42]})
    def test_a_pattern_of_another_type_masks_every_name(self) -> None:
        self.assertEqual(self._kwargs(user="bob"), {"user": MASK})


class TextMaskingTests(AdminTestCase):
    """Tracebacks and concurrency keys hide secrets on the job page."""

    def setUp(self) -> None:
        self.login(self.viewer)
        self.job = Job.objects.get(result_id=tasks.echo.enqueue(password="s3cret-value").id)
        Job.objects.filter(pk=self.job.pk).update(
            errors=[{"exception_class_path": "builtins.ValueError", "traceback": TRACEBACK}],
            concurrency_key="testproject.tasks.echo/s3cret-value",
        )

    def test_traceback_and_key_are_masked(self) -> None:
        page = self.client.get(job_url("change", self.job.pk))
        for secret in ("s3cret-value", "tok-abcdef", "eyJhbGciOi", "pw-9876"):
            self.assertNotContains(page, secret)
        self.assertContains(page, "login refused for ********; api_token=********")
        self.assertContains(page, "Authorization: ********")
        self.assertContains(page, "postgres://app:********@db/app")
        self.assertContains(page, "testproject.tasks.echo/********")
        self.assertContains(page, "ValueError: login refused")

    @override_settings(ROBUST_QUEUE={"admin_mask": None})
    def test_masking_off_shows_everything(self) -> None:
        page = self.client.get(job_url("change", self.job.pk))
        self.assertContains(page, "s3cret-value")
        self.assertContains(page, "api_token=tok-abcdef")

    @override_settings(ROBUST_QUEUE={"admin_mask": upper_everything})
    def test_a_callable_hides_its_values_in_the_traceback_too(self) -> None:
        page = self.client.get(job_url("change", self.job.pk))
        self.assertNotContains(page, "s3cret-value")
        self.assertContains(page, "api_token=********")

    @override_settings(ROBUST_QUEUE={"admin_mask": leaky})
    def test_a_broken_callable_logs_no_value(self) -> None:
        with self.assertLogs("robust_queue.admin.masking.values", "ERROR") as logs:
            page = self.client.get(job_url("change", self.job.pk))
        self.assertNotContains(page, "s3cret-value")
        self.assertNotIn("s3cret-value", "\n".join(logs.output))
        self.assertIn("RuntimeError", "\n".join(logs.output))


class RecurringMaskingTests(AdminTestCase):
    def test_the_recurring_page_masks_arguments(self) -> None:
        recurring = RecurringTask.objects.create(
            key="sync",
            schedule="0 3 * * *",
            task_path="testproject.tasks.echo",
            arguments={"args": [], "kwargs": {"api_token": "rt-s3cret", "user": "bob"}},
        )
        self.login(self.viewer)
        page = self.client.get(
            reverse("admin:robust_queue_recurringtask_change", args=[recurring.pk])
        )
        self.assertEqual(page.status_code, 200)
        self.assertNotContains(page, "rt-s3cret")
        self.assertContains(page, "&quot;api_token&quot;: &quot;********&quot;")
        self.assertContains(page, "bob")


class ConcurrencyKeyMaskingTests(AdminTestCase):
    """Keys built from masked arguments are masked on the concurrency page."""

    def setUp(self) -> None:
        self.login(self.viewer)
        self.key = "testproject.tasks.echo/s3cret-value"
        job = Job.objects.get(result_id=tasks.echo.enqueue(password="s3cret-value").id)
        self.job = block(job, self.key)
        expires = timezone.now() + timedelta(minutes=5)
        Semaphore.objects.create(key=self.key, value=0, expires_at=expires)
        Semaphore.objects.create(key="gone.task/abcdef", value=0, expires_at=expires)

    def test_keys_are_masked_and_not_put_in_links(self) -> None:
        page = self.client.get(reverse("admin:robust_queue_concurrency"))
        self.assertNotContains(page, "s3cret-value")
        self.assertContains(page, "testproject.tasks.echo/********", count=2)
        # The masked key's blocked jobs are linked by a job of it.
        self.assertContains(page, f"?state=blocked&amp;key_of={self.job.pk}")
        self.assertContains(page, "gone.task/********")
        self.assertContains(page, "key-1")

    @override_settings(ROBUST_QUEUE={"admin_mask": []})
    def test_masking_off_shows_keys(self) -> None:
        page = self.client.get(reverse("admin:robust_queue_concurrency"))
        self.assertContains(page, "s3cret-value", count=3)
        self.assertContains(page, "gone.task/abcdef")
