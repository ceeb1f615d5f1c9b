"""A concurrency slot counter per key, with a lease that expires."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import models, transaction
from django.utils import timezone

from .batching import drain
from .clock import DatabaseNow
from .sql import dialect_for


class SemaphoreQuerySet(models.QuerySet["Semaphore"]):
    def wait(self, key: str, limit: int, lease: timedelta) -> bool:
        """Take one slot of ``key``; False if all ``limit`` are taken.

        The row stays locked until the caller's transaction ends, so a
        concurrent ``signal`` waits and then sees any job blocked here.
        """
        self._lock_or_create(key, limit, lease)
        rows = self.filter(key=key, value__gt=0)
        return rows.update(value=models.F("value") - 1, **_renewed(lease)) > 0

    def signal(self, key: str, limit: int, lease: timedelta) -> bool:
        """Give one slot of ``key`` back; never above ``limit``."""
        rows = self.filter(key=key, value__lt=limit)
        return rows.update(value=models.F("value") + 1, **_renewed(lease)) > 0

    def expired(self) -> SemaphoreQuerySet:
        """Semaphores whose lease ended, by the database's clock."""
        return self.filter(expires_at__lt=DatabaseNow())

    def expire_all_in_batches(self, batch_size: int = 500) -> int:
        """Delete expired semaphores, a batch per transaction."""
        return drain(lambda: self._expire_batch(batch_size), batch_size)

    def _expire_batch(self, batch_size: int) -> int:
        with transaction.atomic(using=self.db):
            expired = self.expired().select_for_update(skip_locked=True)
            pks = list(expired.values_list("pk", flat=True)[:batch_size])
            self.filter(pk__in=pks).delete()
        return len(pks)

    def _lock_or_create(self, key: str, limit: int, lease: timedelta) -> None:
        # An upsert locks the row exclusively whether it inserts it or not.
        # A plain INSERT that hits the unique key takes a shared lock on
        # MySQL/MariaDB, and two such transactions deadlock upgrading it.
        self.bulk_create(
            [Semaphore(key=key, value=limit, **_renewed(lease))],
            update_conflicts=True,
            update_fields=["updated_at"],
            unique_fields=dialect_for(self.db).upsert_target(["key"]),
        )


def _renewed(lease: timedelta) -> dict[str, Any]:
    # Leases are compared by other hosts: stamp them with the database's
    # clock, inside the statement.
    return {"expires_at": DatabaseNow() + lease, "updated_at": DatabaseNow()}


class Semaphore(models.Model):
    key = models.CharField(max_length=255, unique=True)
    value = models.IntegerField()
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = SemaphoreQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_semaphore"
        indexes = [models.Index(fields=["expires_at"], name="rq_semaphore_expires")]

    def __str__(self) -> str:
        return f"semaphore {self.key}={self.value}"
