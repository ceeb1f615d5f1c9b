"""A job whose last attempt failed and will not be retried by itself."""

from __future__ import annotations

import traceback

from django.db import models

from .execution import Execution, dispatch_now, job_field


def error_record(exc: BaseException) -> dict[str, str]:
    """The stored form of one failed attempt (Django's ``TaskError``)."""
    cls = type(exc)
    return {
        "exception_class_path": f"{cls.__module__}.{cls.__qualname__}",
        "traceback": "".join(traceback.format_exception(exc)),
    }


class FailedExecutionQuerySet(models.QuerySet["FailedExecution"]):
    def retry_all(self) -> int:
        """Make every job of this queryset ready again."""
        return dispatch_now(self)


class FailedExecution(Execution):
    job = job_field("failed_execution")
    error = models.JSONField(default=dict)

    objects = FailedExecutionQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_failed_execution"

    @property
    def exception_class_path(self) -> str:
        return str(self.error.get("exception_class_path", ""))

    def retry(self) -> bool:
        """Make this job ready again; False if it was retried meanwhile."""
        using = self._state.db or "default"
        return FailedExecution.objects.using(using).filter(pk=self.pk).retry_all() == 1
