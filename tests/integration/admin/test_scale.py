"""Lists and counts stay bounded: capped counts, no full COUNT(*)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext

from robust_queue.admin.counting import CappedPaginator
from robust_queue.models import Job
from robust_queue.operations.counting import CappedCount, capped_count
from testproject import tasks
from tests.integration.admin.base import changelist


class CappedCountTests(TestCase):
    def test_counts_exactly_below_the_cap_and_shows_plus_above(self) -> None:
        for i in range(5):
            tasks.add.enqueue(i, i)
        self.assertEqual(str(capped_count(Job.objects.all(), cap=10)), "5")
        capped = capped_count(Job.objects.all(), cap=3)
        self.assertIs(capped.is_capped, True)
        self.assertEqual(str(capped), "3+")
        self.assertEqual(str(CappedCount(12345, 10000)), "10,000+")

    def test_paginator_offers_pages_up_to_the_cap(self) -> None:
        for i in range(7):
            tasks.add.enqueue(i, i)
        paginator = CappedPaginator(Job.objects.order_by("pk"), 2)
        paginator.cap = 4
        # Four jobs, two per page: the fifth (past the cap) is on no page.
        self.assertEqual(paginator.num_pages, 2)

    def test_changelist_never_counts_the_whole_table(self) -> None:
        tasks.add.enqueue(1, 1)
        self.client.force_login(User.objects.create_superuser("root", password="pw"))
        with CaptureQueriesContext(connection) as queries:
            response = self.client.get(changelist())
        self.assertEqual(response.status_code, 200)
        counts = [q["sql"] for q in queries if "COUNT(" in q["sql"].upper()]
        self.assertTrue(counts)
        for sql in counts:
            self.assertIn("LIMIT", sql.upper(), sql)
