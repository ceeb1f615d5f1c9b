"""Every page and panel of the admin, for jobs whose arguments, error,
traceback, metadata and keys carry each kind of secret, shows none of them
(issue 28 §1); the worker's log lines and the metrics show none either."""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta
from typing import Any

from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from robust_queue.masking import MASK, logs
from robust_queue.models import Job, RecurringTask, Semaphore, UniqueKey
from testproject import tasks
from tests.helpers import claim, work_off
from tests.integration.admin.base import AdminTestCase, block, changelist, job_url

# Each kind of secret, as a task would hold it, and the part of it that
# must never be shown.
SECRETS: dict[str, tuple[str, str]] = {
    "name=value in text": ("token=pair-7d1e4b9c", "pair-7d1e4b9c"),
    "Stripe key": ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    "Stripe restricted key": ("rk_test_51HkYx2Lz9aBcDeFgH", "51HkYx2Lz9aBcDeFgH"),
    "AWS access key id": ("AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    "GitHub token": ("ghp_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c6912E7710c"),
    "Slack token": ("xoxb-17653672481-19874698323-pdFZKVeTuE8s", "pdFZKVeTuE8s"),
    "bearer token": ("Bearer bRr-8c1d7e5f9a2b4c6d", "bRr-8c1d7e5f9a2b4c6d"),
    "JWT": (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
        "dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
    ),
    "PEM private key": (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEApemBody0xyz\n-----END RSA PRIVATE KEY-----",
        "MIIEpAIBAAKCAQEApemBody0xyz",
    ),
    "password in a URL": ("postgres://app:url-pw-55aa1@db/app", "url-pw-55aa1"),
}
BY_NAME = "tok-by-name-3f9a2c"  # given to a parameter named api_token
HARMLESS = "user:42-harmless"  # given to a parameter named key
MESSAGE = "upstream refused: " + " | ".join(value for value, _ in SECRETS.values())
HIDDEN = [hidden for _, hidden in SECRETS.values()] + [BY_NAME]


def secret_kwargs() -> dict[str, Any]:
    return {
        "api_token": BY_NAME,
        "key": HARMLESS,
        "note": MESSAGE,
        "nested": {"items": [value for value, _ in SECRETS.values()]},
    }


class MaskingEverywhereTests(AdminTestCase):
    """The test client over every admin URL that shows these jobs."""

    def setUp(self) -> None:
        self.login()
        metadata = {"request": {"Authorization": SECRETS["bearer token"][0]}, "note": MESSAGE}
        # A failed job: its message (so its error, traceback and search
        # results) carries every kind of secret.
        self.failed_job = self._job(tasks.fail.using(queue_name="masking").enqueue(MESSAGE).id)
        Job.objects.filter(pk=self.failed_job.pk).update(metadata=metadata)
        work_off()
        # A running one, a blocked one (its key built from a secret) and
        # one holding a unique key built from a secret.
        self.running_job = self._job(
            tasks.echo.using(queue_name="slow2").enqueue(**secret_kwargs()).id
        )
        claim(queue_name="slow2")
        key = f"testproject.tasks.echo/{SECRETS['Stripe key'][0]}"
        self.blocked_job = block(self._job(tasks.echo.enqueue(**secret_kwargs()).id), key)
        Job.objects.filter(pk=self.blocked_job.pk).update(metadata=metadata)
        Semaphore.objects.create(key=key, value=0, expires_at=timezone.now() + timedelta(minutes=5))
        self.unique_job = self._job(tasks.echo.enqueue(**secret_kwargs()).id)
        label = f"unique:testproject.tasks.echo/{SECRETS['AWS access key id'][0]}"
        UniqueKey.objects.create(
            key_hash=hashlib.sha256(label.encode()).hexdigest(),
            key=label,
            result_id=self.unique_job.result_id,
        )
        self.recurring = RecurringTask.objects.create(
            key="masked-sync",
            schedule="0 3 * * *",
            task_path="testproject.tasks.echo",
            arguments={"args": [MESSAGE], "kwargs": secret_kwargs()},
        )

    def _job(self, result_id: str) -> Job:
        return Job.objects.get(result_id=result_id)

    def urls(self) -> list[str]:
        jobs = [self.failed_job, self.running_job, self.blocked_job, self.unique_job]
        urls = [job_url("change", job.pk) for job in jobs]
        urls += [
            changelist(),
            *(changelist(state=state) for state in ("failed", "claimed", "blocked", "ready")),
            changelist(state="failed", q="refused"),
            changelist(state="failed", q="ValueError"),
            changelist(q="echo"),
            changelist(state="blocked", key_of=str(self.blocked_job.pk)),
            changelist(queue="masking"),
            reverse("admin:robust_queue_concurrency"),
            reverse("admin:robust_queue_concurrency") + f"?job={self.blocked_job.pk}",
            reverse("admin:robust_queue_overview"),
            reverse("admin:robust_queue_task_page", args=["testproject.tasks.echo"]),
            reverse("admin:robust_queue_task_page", args=["testproject.tasks.fail"]),
            reverse("admin:robust_queue_recurringtask_changelist"),
            reverse("admin:robust_queue_recurringtask_change", args=[self.recurring.pk]),
            reverse("admin:robust_queue_process_changelist"),
            reverse("admin:index"),
            reverse("admin:app_list", args=["robust_queue"]),
            job_url("action", self.failed_job.pk, "discard"),
            job_url("action", self.blocked_job.pk, "run"),
            job_url("action", self.running_job.pk, "cancel"),
        ]
        return urls

    def test_no_page_shows_any_secret(self) -> None:
        for url in self.urls():
            with self.subTest(url=url):
                response = self.client.get(url, follow=True)
                self.assertEqual(response.status_code, 200)
                html = response.content.decode()
                for hidden in HIDDEN:
                    self.assertNotIn(hidden, html)

    def test_the_pages_show_what_they_mask_and_the_harmless_key(self) -> None:
        """The panels are there, masked: not an empty page that passes."""
        page = self.client.get(job_url("change", self.running_job.pk)).content.decode()
        self.assertIn(HARMLESS, page)  # a parameter named "key" is not a secret
        self.assertIn(f"&quot;api_token&quot;: &quot;{MASK}&quot;", page)
        self.assertIn(f"token={MASK}", page)
        self.assertIn(f"Bearer {MASK}", page)
        self.assertIn(f"postgres://app:{MASK}@db/app", page)
        failed = self.client.get(job_url("change", self.failed_job.pk)).content.decode()
        self.assertIn('id="rq-metadata"', failed)
        self.assertIn("upstream refused: token=", failed)
        self.assertIn("of the queue</summary>", failed)  # the traceback, folded
        listed = self.client.get(changelist(state="failed", q="refused"))
        self.assertEqual([j.pk for j in listed.context["cl"].result_list], [self.failed_job.pk])
        for hidden in HIDDEN:
            with self.subTest(hidden=hidden):
                found = self.client.get(changelist(state="failed", q=hidden[:12]))
                self.assertEqual(list(found.context["cl"].result_list), [])

    @override_settings(ROBUST_QUEUE={"admin_mask": []})
    def test_with_masking_off_the_secrets_show(self) -> None:
        """The check above would catch a leak: the secrets are in the rows."""
        page = self.client.get(job_url("change", self.failed_job.pk)).content.decode()
        for _, hidden in SECRETS.values():
            with self.subTest(hidden=hidden):
                self.assertIn(hidden, page)


class LogMaskingTests(AdminTestCase):
    def test_a_failed_task_is_logged_with_its_secrets_masked(self) -> None:
        """The framework logs the failure's message and traceback; the
        worker's own lines name no value."""
        tasks.fail.enqueue(MESSAGE)
        with self.assertLogs(level="INFO") as captured:
            work_off()
        text = "\n".join(captured.output)
        self.assertIn("upstream refused: token=", text)
        self.assertIn("Traceback", text)
        for hidden in HIDDEN:
            with self.subTest(hidden=hidden):
                self.assertNotIn(hidden, text)

    def test_every_logger_of_the_package_masks(self) -> None:
        """Loggers made before their module is imported are the ones the
        modules get; a WARNING with a secret is masked, whatever logs it."""
        names = logs.package_loggers()
        self.assertIn("robust_queue.running.performing", names)
        self.assertIn("robust_queue.processes.scheduler", names)
        logger = logging.getLogger("robust_queue.processes.hooks")
        with self.assertLogs(logger, "WARNING") as captured:
            logger.warning("hook failed: %s", SECRETS["Stripe key"][0])
        self.assertEqual(captured.output, [f"WARNING:{logger.name}:hook failed: {MASK}"])


class MetricsMaskingTests(AdminTestCase):
    def test_the_metrics_show_no_secret(self) -> None:
        """Labels are queues, tasks, states, process kinds, hosts and
        worker names: none is built from a job's values."""
        tasks.fail.enqueue(MESSAGE)
        tasks.echo.enqueue(**secret_kwargs())
        work_off()
        self.login()
        response = self.client.get(reverse("robust_queue:metrics"))
        self.assertEqual(response.status_code, 200)
        text = response.content.decode()
        self.assertIn("queue=", text)
        for hidden in HIDDEN:
            self.assertNotIn(hidden, text)
