"""Keyset batches of primary keys."""

from __future__ import annotations

from django.test import TestCase

from robust_queue.models import Job
from robust_queue.models.batching import id_batches
from testproject import tasks


class IdBatchesTests(TestCase):
    def test_ascending_batches_that_rows_deleted_meanwhile_do_not_shift(self) -> None:
        for i in range(5):
            tasks.add.enqueue(i, 1)
        pks = sorted(Job.objects.values_list("pk", flat=True))
        seen = []
        for batch in id_batches(Job.objects.all(), 2):
            seen.append(batch)
            Job.objects.filter(pk__in=batch).delete()
        self.assertEqual(seen, [pks[0:2], pks[2:4], pks[4:5]])

    def test_nothing_to_do_is_no_batch(self) -> None:
        self.assertEqual(list(id_batches(Job.objects.none(), 3)), [])
