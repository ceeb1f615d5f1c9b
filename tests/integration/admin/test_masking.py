"""ROBUST_QUEUE["admin_mask"] hides secrets in arguments and return values."""

from __future__ import annotations

from typing import Any

from django.test import override_settings

from robust_queue.admin.masking import MASK, displayed
from robust_queue.models import Job
from testproject import tasks
from tests.helpers import work_off
from tests.integration.admin.base import AdminTestCase, job_url


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
        with self.assertLogs("robust_queue.admin.masking", "ERROR"):
            self.assertEqual(displayed(job), {"args": [MASK], "kwargs": {}, "return_value": MASK})

    def test_no_setting_shows_values(self) -> None:
        job = self._job(tasks.add.enqueue(1, 2))
        self.assertEqual(displayed(job)["args"], [1, 2])
