"""A concurrency slot counter per key, with a lease that expires."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import connections, models, transaction
from django.utils import timezone


class SemaphoreQuerySet(models.QuerySet["Semaphore"]):
    def wait(self, key: str, limit: int, lease: timedelta) -> bool:
        """Take one slot of ``key``; False if all ``limit`` are taken.

        The row stays locked until the caller's transaction ends, so a
        concurrent ``signal`` waits and then sees any job blocked here.
        """
        now = timezone.now()
        self._lock_or_create(key, limit, now + lease)
        rows = self.filter(key=key, value__gt=0)
        return (
            rows.update(value=models.F("value") - 1, expires_at=now + lease, updated_at=now)
            > 0
        )

    def signal(self, key: str, limit: int, lease: timedelta) -> bool:
        """Give one slot of ``key`` back; never above ``limit``."""
        now = timezone.now()
        rows = self.filter(key=key, value__lt=limit)
        return (
            rows.update(value=models.F("value") + 1, expires_at=now + lease, updated_at=now)
            > 0
        )

    def expired(self) -> SemaphoreQuerySet:
        return self.filter(expires_at__lt=timezone.now())

    def expire_all_in_batches(self, batch_size: int = 500) -> int:
        """Delete expired semaphores, a batch per transaction."""
        deleted = 0
        while True:
            with transaction.atomic(using=self.db):
                expired = self.expired().select_for_update(skip_locked=True)
                pks = list(expired.values_list("pk", flat=True)[:batch_size])
                self.filter(pk__in=pks).delete()
            deleted += len(pks)
            if len(pks) < batch_size:
                return deleted

    def _lock_or_create(self, key: str, limit: int, expires_at: datetime) -> None:
        # An upsert locks the row exclusively whether it inserts it or not.
        # A plain INSERT that hits the unique key takes a shared lock on
        # MySQL/MariaDB, and two such transactions deadlock upgrading it.
        features = connections[self.db].features
        self.bulk_create(
            [Semaphore(key=key, value=limit, expires_at=expires_at)],
            update_conflicts=True,
            update_fields=["updated_at"],
            unique_fields=["key"] if features.supports_update_conflicts_with_target else None,
        )


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
