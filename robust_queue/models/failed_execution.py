"""A job whose last attempt failed and will not be retried by itself."""

from __future__ import annotations

from django.db import models

# Where it was defined before error_record.py; still imported from here.
from .error_record import error_record as error_record
from .execution import Execution, dispatch_now, job_field


class FailedExecutionQuerySet(models.QuerySet["FailedExecution"]):
    def retry_all(self) -> int:
        """Make every job of this queryset ready again (counted as retried)."""
        return dispatch_now(self, count_as="retried")


class FailedExecution(Execution):
    job = job_field("failed_execution")
    error = models.JSONField(default=dict)

    objects = FailedExecutionQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_failed_execution"
        # The admin's "failed in the last hour" (migration 0011).
        indexes = [models.Index(fields=["created_at"], name="rq_failed_created")]

    @property
    def exception_class_path(self) -> str:
        # A row edited by hand may hold anything: no class then, no error.
        error = self.error
        return str(error.get("exception_class_path", "")) if isinstance(error, dict) else ""

    def retry(self) -> bool:
        """Make this job ready again; False if it was retried meanwhile."""
        using = self._state.db or "default"
        return FailedExecution.objects.using(using).filter(pk=self.pk).retry_all() == 1
