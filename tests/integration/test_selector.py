"""Queue selectors: order, wildcards, pauses."""

from __future__ import annotations

from unittest import mock

from django.test import TestCase

from robust_queue.models import Queue
from robust_queue.processes import selector
from robust_queue.processes.selector import QueueSelector
from testproject import tasks


class SelectorTests(TestCase):
    def setUp(self) -> None:
        for name in ("mail_fast", "mail_slow", "reports", "default"):
            tasks.add.using(queue_name=name).enqueue(1, 1)

    def test_star_alone_is_one_unfiltered_query(self) -> None:
        self.assertEqual(QueueSelector(("*",), using="default").plan(), [(None, ())])

    def test_star_alone_skips_paused_queues(self) -> None:
        Queue("reports").pause()
        self.assertEqual(QueueSelector(("*",), using="default").plan(), [(None, ("reports",))])

    def test_exact_names_keep_their_order_and_prefixes_expand(self) -> None:
        plan = QueueSelector(("reports", "mail*", "missing"), using="default").plan()
        self.assertEqual(
            [name for name, _ in plan], ["reports", "mail_fast", "mail_slow", "missing"]
        )

    def test_paused_queues_are_skipped_and_the_set_is_cached_briefly(self) -> None:
        chooser = QueueSelector(("reports", "default"), using="default")
        self.assertEqual(len(chooser.plan()), 2)
        Queue("reports").pause()
        self.assertEqual(len(chooser.plan()), 2, "cached for CACHE_SECONDS")
        with mock.patch.object(selector, "CACHE_SECONDS", 0):
            self.assertEqual([n for n, _ in chooser.plan()], ["default"])
