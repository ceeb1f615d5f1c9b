"""What operators did to the queue from the admin, everyone's in one place.

Django's ``LogEntry`` (the admin's "Recent actions", a job's page) keeps
its entries too; this row says what an operator looks for across users:
who, which action, how many jobs, on which queue, when. It lives with the
queue's tables (the queue may have its own database): the user is kept by
id and name, not by a foreign key across databases.

Seeing these rows needs ``robust_queue.view_queueaction`` ("Can view queue
action"): superusers hold it; other staff only when given it.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

MAX_QUEUE_NAME = 255
MAX_MESSAGE = 1000


class QueueActionQuerySet(models.QuerySet["QueueAction"]):
    def record(
        self,
        *,
        user_id: int | None,
        username: str,
        verb: str,
        message: str,
        count: int | None = None,
        queue_name: str = "",
        job_id: int | None = None,
    ) -> QueueAction:
        """Write one action (``count`` jobs, if it acted on jobs; the queue
        if it acted on one, "" if on several or none)."""
        return self.create(
            user_id=user_id,
            username=username[:150],
            verb=verb[:32],
            message=message[:MAX_MESSAGE],
            count=count,
            queue_name=queue_name[:MAX_QUEUE_NAME],
            job_id=job_id,
        )


class QueueAction(models.Model):
    action_time = models.DateTimeField(default=timezone.now)
    # The user's id in the users' database and their name then.
    user_id = models.IntegerField(null=True, blank=True)
    username = models.CharField(max_length=150)
    # "retry", "discard", "run now", "cancel", "pause", "quiet", ...
    verb = models.CharField(max_length=32)
    # Jobs the action changed; None for an action on no job (a pause).
    count = models.BigIntegerField(null=True, blank=True)
    queue_name = models.CharField(max_length=MAX_QUEUE_NAME, blank=True, default="")
    # The job acted on, if one (it may be discarded since: no foreign key).
    job_id = models.BigIntegerField(null=True, blank=True)
    message = models.TextField()

    objects = QueueActionQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_queue_action"
        default_permissions = ("view",)
        # The page lists the newest first (the primary key's order); each
        # filter reads its own index.
        indexes = [
            models.Index(fields=["username", "id"], name="rq_action_user"),
            models.Index(fields=["verb", "id"], name="rq_action_verb"),
            models.Index(fields=["queue_name", "id"], name="rq_action_queue"),
        ]

    def __str__(self) -> str:
        return f"{self.username}: {self.message}"
