"""Users and jobs for the admin tests."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth.models import Permission, User
from django.test import TestCase
from django.urls import reverse
from django.utils import timezone

from robust_queue.models import BlockedExecution, Job, ReadyExecution
from testproject import tasks
from tests.helpers import claim, make_process, work_off

ACTION_PERMISSIONS = (
    "retry_job",
    "discard_job",
    "run_job_now",
    "pause_queue",
    "pause_task",
    "toggle_recurringtask",
    "cancel_job",
)
VIEW_PERMISSIONS = ("view_job", "view_process", "view_recurringtask")


def make_staff(username: str, *codenames: str) -> User:
    user = User.objects.create_user(username, password="pw", is_staff=True)
    perms = Permission.objects.filter(
        content_type__app_label="robust_queue", codename__in=codenames
    )
    user.user_permissions.set(perms)
    return user


def job_url(name: str, *args: Any) -> str:
    return reverse(f"admin:robust_queue_job_{name}", args=args)


def changelist(**params: str) -> str:
    query = "&".join(f"{key}={value}" for key, value in params.items())
    return job_url("changelist") + (f"?{query}" if query else "")


class AdminTestCase(TestCase):
    """One job in every state, and users for the permission matrix."""

    @classmethod
    def setUpTestData(cls) -> None:
        cls.superuser = User.objects.create_superuser("root", password="pw")
        cls.viewer = make_staff("viewer", *VIEW_PERMISSIONS)
        cls.finished = Job.objects.get(result_id=tasks.add.enqueue(1, 2).id)
        cls.failed = Job.objects.get(result_id=tasks.fail.enqueue("kaput").id)
        work_off()
        cls.ready = Job.objects.get(result_id=tasks.report.enqueue(3).id)
        cls.scheduled = Job.objects.get(
            result_id=tasks.add.using(run_after=timezone.now() + timedelta(hours=1))
            .enqueue(5, 6)
            .id
        )
        cls.process = make_process()
        cls.running = Job.objects.get(
            result_id=tasks.sleep_for.using(queue_name="slow").enqueue(1).id
        )
        claim(queue_name="slow", process=cls.process)
        cls.blocked = block(Job.objects.get(result_id=tasks.add.enqueue(7, 8).id), "key-1")

    def login(self, user: User | None = None) -> None:
        self.client.force_login(user or self.superuser)


def block(job: Job, key: str) -> Job:
    """Move a ready ``job`` to blocked on ``key`` (as a limit would)."""
    ReadyExecution.objects.filter(job=job).delete()
    Job.objects.filter(pk=job.pk).update(concurrency_key=key)
    BlockedExecution.objects.create(
        job=job,
        queue_name=job.queue_name,
        priority=job.priority,
        concurrency_key=key,
        expires_at=timezone.now() + timedelta(minutes=5),
    )
    job.refresh_from_db()
    return job
