"""Admin pages at their edges: the time filter reads the time of the state
listed, the concurrency page with an odd or stale ``?job=``, workers
running more jobs than their row lists, long failure messages, batch
states, and damaged rows shown without errors or secrets."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

from django.urls import reverse
from django.utils import timezone

import robust_queue
from robust_queue.admin.jobs import concurrency
from robust_queue.admin.jobs.columns import MESSAGE_MAX
from robust_queue.admin.processes import RUNNING_JOBS_SHOWN
from robust_queue.models import (
    Batch,
    BlockedExecution,
    FailedExecution,
    Job,
    ReadyExecution,
    Semaphore,
)
from robust_queue.running.performing import perform
from testproject import control_tasks, tasks
from tests.helpers import claim, make_process, work_off
from tests.integration.admin.base import block, changelist, job_url
from tests.integration.admin.test_action_edges import EdgeTestCase

SECRET = "s3cret-value"
TWO_DAYS_AGO = timedelta(days=2)


class AdminPageTestCase(EdgeTestCase):
    def setUp(self) -> None:
        self.login(self.viewer)

    def listed(self, **params: str) -> list[int]:
        response = self.client.get(changelist(**params))
        self.assertEqual(response.status_code, 200)
        return [job.pk for job in response.context["cl"].result_list]


class PeriodFilterTests(AdminPageTestCase):
    """``?period=`` is when the job reached the state listed: its failure
    on the failed list, its enqueueing on the lists of waiting jobs."""

    def test_the_failed_list_goes_by_when_the_job_failed(self) -> None:
        Job.objects.filter(pk=self.failed.pk).update(enqueued_at=timezone.now() - TWO_DAYS_AGO)
        self.assertEqual(self.listed(state="failed", period="1h"), [self.failed.pk])
        FailedExecution.objects.filter(job=self.failed).update(
            created_at=timezone.now() - TWO_DAYS_AGO
        )
        self.assertEqual(self.listed(state="failed", period="1h"), [])
        self.assertEqual(self.listed(state="failed", period="24h"), [])
        self.assertEqual(self.listed(state="failed", period="7d"), [self.failed.pk])

    def test_waiting_lists_go_by_when_the_job_was_enqueued(self) -> None:
        Job.objects.filter(pk=self.ready.pk).update(enqueued_at=timezone.now() - TWO_DAYS_AGO)
        self.assertEqual(self.listed(state="ready", period="24h"), [])
        self.assertEqual(self.listed(state="ready", period="7d"), [self.ready.pk])
        everything = self.listed(period="1h")
        self.assertNotIn(self.ready.pk, everything)
        self.assertIn(self.scheduled.pk, everything)
        self.assertIn(self.ready.pk, self.listed(period="7d"))


class ConcurrencyPageEdgeTests(AdminPageTestCase):
    @property
    def url(self) -> str:
        return reverse("admin:robust_queue_concurrency")

    def test_a_job_parameter_that_is_no_job_lists_nothing(self) -> None:
        """Only the key of the job named is shown; a value that names no
        job shows no key (not every key)."""
        Semaphore.objects.create(
            key="key-1", value=0, expires_at=timezone.now() + timedelta(minutes=5)
        )
        for value in ("abc", "0", "-1", "9" * 30, "99999"):
            with self.subTest(job=value):
                page = self.client.get(self.url, {"job": value})
                self.assertEqual(page.status_code, 200)
                self.assertEqual(page.context["blocked_keys"], [])
                self.assertEqual(page.context["semaphores"], [])
                self.assertContains(
                    page, f"Job #{value} has no concurrency key (or no longer exists)."
                )
                self.assertNotContains(page, "key-1")

    def test_the_job_parameter_is_escaped(self) -> None:
        page = self.client.get(self.url, {"job": "<b>x</b>"})
        self.assertContains(page, "Job #&lt;b&gt;x&lt;/b&gt; has no concurrency key")
        self.assertNotContains(page, "<b>x</b>")

    def test_a_key_with_a_semaphore_and_no_blocked_job_shows_the_semaphore(self) -> None:
        """The job that held the key's last blocked row moved on: its key
        still shows its semaphore, and no blocked row."""
        BlockedExecution.objects.filter(job=self.blocked).delete()
        soon = timezone.now() + timedelta(minutes=5)
        Semaphore.objects.create(key="key-1", value=2, expires_at=soon)
        Semaphore.objects.create(key="key-other", value=1, expires_at=soon)
        page = self.client.get(self.url, {"job": str(self.blocked.pk)})
        self.assertEqual(page.context["blocked_keys"], [])
        self.assertEqual([s.key for s, _ in page.context["semaphores"]], ["key-1"])
        self.assertContains(page, "The concurrency key of")
        self.assertContains(page, "<code>key-1</code>", html=True)
        self.assertNotContains(page, "key-other")

    def test_past_the_sample_only_the_oldest_blocked_jobs_are_grouped(self) -> None:
        newer = block(Job.objects.get(result_id=tasks.add.enqueue(9, 9).id), "key-2")
        with mock.patch.object(concurrency, "BLOCKED_SAMPLE", 1):
            page = self.client.get(self.url)
        self.assertEqual(
            [row["concurrency_key"] for row in page.context["blocked_keys"]], ["key-1"]
        )
        self.assertContains(page, "Grouped among the oldest 1 blocked jobs.")
        # Without the bound, both keys are grouped and no note is shown.
        page = self.client.get(self.url)
        self.assertEqual(
            sorted(row["concurrency_key"] for row in page.context["blocked_keys"]),
            ["key-1", newer.concurrency_key],
        )
        self.assertNotContains(page, "rq-blocked-sampled")


class RunningJobsColumnTests(AdminPageTestCase):
    def test_a_busy_worker_links_the_rest_of_its_jobs(self) -> None:
        extra = RUNNING_JOBS_SHOWN + 2
        busy = make_process("busy-worker")
        for n in range(extra):
            tasks.sleep_for.using(queue_name="busy").enqueue(n)
        claimed = claim(queue_name="busy", process=busy)
        self.assertEqual(len(claimed), extra)
        page = self.client.get(reverse("admin:robust_queue_process_changelist"))
        ids = sorted(c.job_id for c in claimed)
        for job_id in ids[:RUNNING_JOBS_SHOWN]:
            self.assertContains(page, f'{job_url("change", job_id)}">#{job_id} sleep_for</a>')
        for job_id in ids[RUNNING_JOBS_SHOWN:]:
            self.assertNotContains(page, f">#{job_id} sleep_for</a>")
        more = (
            reverse("admin:robust_queue_job_changelist") + f"?state=claimed&amp;process={busy.pk}"
        )
        self.assertContains(page, f'<a href="{more}">and 2 more</a>', html=True)
        # That link lists all of them.
        self.assertEqual(sorted(self.listed(state="claimed", process=str(busy.pk))), ids)

    def test_a_worker_at_the_limit_has_no_more_link(self) -> None:
        page = self.client.get(reverse("admin:robust_queue_process_changelist"))
        self.assertContains(page, f">#{self.running.pk} sleep_for</a>")
        self.assertNotContains(page, "more</a>")


class JobListColumnEdgeTests(AdminPageTestCase):
    def test_a_claim_without_a_process_shows_no_worker(self) -> None:
        orphan = Job.objects.get(
            result_id=tasks.sleep_for.using(queue_name="nowhere").enqueue(2).id
        )
        claim(queue_name="nowhere")
        page = self.client.get(changelist(state="claimed"))
        self.assertEqual(
            sorted(job.pk for job in page.context["cl"].result_list),
            sorted([self.running.pk, orphan.pk]),
        )
        self.assertContains(page, f">process {self.process.pk}</a>")
        self.assertContains(page, '<td class="field-worker">—</td>', html=True)

    def test_a_long_failure_message_is_cut_with_an_ellipsis(self) -> None:
        message = "".join(f"{n:03d}" for n in range(100))  # 300 characters
        result = tasks.fail.enqueue(message)
        work_off()
        job = Job.objects.get(result_id=result.id)
        page = self.client.get(changelist(state="failed"))
        shown = message[: MESSAGE_MAX - 1] + "…"
        self.assertContains(
            page,
            f'<span class="rq-exception">ValueError</span><span class="rq-message">{shown}</span>',
            html=True,
        )
        self.assertNotContains(page, message[:MESSAGE_MAX])
        # The job's page keeps the whole message.
        self.assertContains(self.client.get(job_url("change", job.pk)), message)

    def test_a_short_message_loses_only_its_class_prefix(self) -> None:
        page = self.client.get(changelist(state="failed"))
        self.assertContains(
            page,
            '<span class="rq-exception">ValueError</span><span class="rq-message">kaput</span>',
            html=True,
        )


class BatchStateTests(AdminPageTestCase):
    def setUp(self) -> None:
        self.client.force_login(self.superuser)

    def _states(self) -> dict[str, str]:
        page = self.client.get(reverse("admin:robust_queue_batch_changelist"))
        self.assertEqual(page.status_code, 200)
        return {
            batch.description: page.context["cl"].model_admin.state(batch)
            for batch in page.context["cl"].result_list
        }

    def test_each_state_of_a_batch_is_named(self) -> None:
        Batch.objects.create(backend_alias="default", description="still open")
        with robust_queue.batch(description="running"):
            tasks.sleep_for.using(queue_name="batch-slow").enqueue(1)
        with robust_queue.batch(description="all good"):
            tasks.add.using(queue_name="batch").enqueue(1, 1)
        with robust_queue.batch(description="one failed"):
            tasks.add.using(queue_name="batch").enqueue(2, 2)
            tasks.fail.using(queue_name="batch").enqueue("no")
        for claimed in claim(queue_name="batch"):
            perform(claimed)
        Batch.objects.complete_all_in_batches()
        self.assertEqual(
            self._states(),
            {
                "still open": "open",
                "running": "running",
                "all good": "complete",
                "one failed": "complete, with failures",
            },
        )
        page = self.client.get(reverse("admin:robust_queue_batch_changelist"))
        self.assertContains(page, '<td class="field-state">complete, with failures</td>', html=True)

    def test_a_batch_job_without_a_state_is_listed_with_a_dash(self) -> None:
        with robust_queue.batch(description="damaged") as batch:
            waiting = tasks.report.enqueue(1)
            stateless = tasks.add.enqueue(1, 1)
        ReadyExecution.objects.filter(job__result_id=stateless.id).delete()
        row = Batch.get(batch.batch_id)
        page = self.client.get(reverse("admin:robust_queue_batch_change", args=[row.pk]))
        self.assertEqual(page.status_code, 200)
        waiting_pk = Job.objects.get(result_id=waiting.id).pk
        stateless_pk = Job.objects.get(result_id=stateless.id).pk
        self.assertContains(page, f"#{waiting_pk} testproject.tasks.report</a> — Ready</li>")
        self.assertContains(page, f"#{stateless_pk} testproject.tasks.add</a> — —</li>")


class RetryPendingAttemptTests(AdminPageTestCase):
    """An error record written before records named their end: the attempt
    of a job waiting for its retry ended when that retry was queued."""

    def _pending(self, result_id: str, accessor: str) -> None:
        [claimed] = claim(queue_name="default", worker_id="worker-host-a-11-abc123")
        perform(claimed)
        job = Job.objects.get(result_id=result_id)
        queued_at = getattr(job, accessor).created_at
        old = [
            {"exception_class_path": e["exception_class_path"], "traceback": e["traceback"]}
            for e in job.errors
        ]
        Job.objects.filter(pk=job.pk).update(errors=old)
        page = self.client.get(job_url("change", job.pk))
        [attempt] = page.context["attempts"]
        self.assertEqual(attempt.outcome, "failed, retry pending")
        self.assertEqual(attempt.ended, queued_at)
        self.assertEqual(attempt.host, "host-a (pid 11)")

    def test_a_retry_due_now_ended_when_it_was_made_ready(self) -> None:
        self._pending(control_tasks.flaky.enqueue("pending", succeed_on=99).id, "ready_execution")

    def test_a_retry_due_later_ended_when_it_was_scheduled(self) -> None:
        self._pending(control_tasks.picky.enqueue("value").id, "scheduled_execution")


class MalformedArgumentsMaskingTests(AdminPageTestCase):
    """With masking on, a job whose arguments cannot be decoded cannot say
    which values are secret: its key and messages hide what they can."""

    def test_a_key_of_undecodable_arguments_is_hidden_after_its_prefix(self) -> None:
        key = f"testproject.tasks.echo/{SECRET}"
        job = block(Job.objects.get(result_id=tasks.echo.enqueue(SECRET).id), key)
        Job.objects.filter(pk=job.pk).update(arguments="not an object")
        page = self.client.get(changelist(state="blocked"))
        self.assertContains(page, "testproject.tasks.echo/********")
        self.assertNotContains(page, SECRET)
        concurrency_page = self.client.get(
            reverse("admin:robust_queue_concurrency"), {"job": str(job.pk)}
        )
        self.assertNotContains(concurrency_page, SECRET)
        # Typing the key cannot confirm it: it shows masked.
        self.assertEqual(self.listed(concurrency_key=key), [])
        self.assertEqual(self.listed(key_of=str(job.pk)), [job.pk])

    def test_a_failure_message_of_undecodable_arguments_masks_named_values(self) -> None:
        traceback = f"Traceback...\nValueError: password={SECRET} rejected"
        error = {"exception_class_path": "builtins.ValueError", "traceback": traceback}
        Job.objects.filter(pk=self.failed.pk).update(errors=[error], arguments=[1, 2])
        FailedExecution.objects.filter(job=self.failed).update(error=error)
        page = self.client.get(changelist(state="failed"))
        self.assertContains(page, "password=******** rejected")
        self.assertNotContains(page, SECRET)
        detail = self.client.get(job_url("change", self.failed.pk))
        self.assertEqual(detail.status_code, 200)
        self.assertNotContains(detail, SECRET)
