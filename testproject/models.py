"""A ledger the example tasks write to, so tests can count real runs."""

from django.db import models


class LedgerEntry(models.Model):
    key = models.CharField(max_length=64)
    attempt = models.IntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["key"], name="ledger_key")]
