"""A tag of a job (``robust_queue.options.tagging``): one row per (job, tag).

Deleting a job deletes its tags in the database itself (``ON DELETE
CASCADE``, added by migration 0013), whichever path deletes it: the
retention's and the discard's plain-SQL deletes skip Django's collector.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.db import models

from ..options.tagging import TAG_MAX_LENGTH

if TYPE_CHECKING:
    from .job_row import JobRow


class JobTagQuerySet(models.QuerySet["JobTag"]):
    def create_all(self, jobs: Sequence[JobRow]) -> None:
        """Write the ``pending_tags`` of ``jobs`` (saved already); the
        caller holds the enqueue's transaction."""
        rows = [JobTag(job_id=job.pk, tag=tag) for job in jobs for tag in job.pending_tags]
        if rows:
            self.bulk_create(rows)

    def recent_tags(self, rows: int) -> set[str]:
        """The tags of the newest ``rows`` rows (no scan of the table)."""
        return set(self.order_by("-pk").values_list("tag", flat=True)[:rows])


class JobTag(models.Model):
    # The constraint is the migration's (ON DELETE CASCADE, which Django
    # cannot declare): the model leaves deleting tags to the database.
    job = models.ForeignKey(
        "robust_queue.Job",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        # The unique (job, tag) index serves look-ups by job.
        db_index=False,
        related_name="tags",
    )
    tag = models.CharField(max_length=TAG_MAX_LENGTH)

    objects = JobTagQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_job_tag"
        default_permissions = ()
        constraints = [
            models.UniqueConstraint(fields=["job", "tag"], name="rq_job_tag_unique"),
        ]
        indexes = [models.Index(fields=["tag", "job"], name="rq_job_tag_by_tag")]

    def __str__(self) -> str:
        return f"tag {self.tag} of job {self.job_id}"
