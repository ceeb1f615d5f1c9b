"""Which queues a worker claims from, and in which order (no database)."""

from __future__ import annotations

from django.test import SimpleTestCase

from robust_queue.processes.selector import plan_for

NAMES = ["default", "mail_bulk", "mail_fast", "reports"]


class PlanTests(SimpleTestCase):
    def test_star_alone_is_one_unfiltered_query(self) -> None:
        """`*` with nothing paused claims from every queue in one query."""
        self.assertEqual(plan_for(("*",), NAMES, set()), [(None, ())])

    def test_star_alone_skips_paused_queues_in_the_same_query(self) -> None:
        plan = plan_for(("*",), NAMES, {"reports", "default"})
        self.assertEqual(plan, [(None, ("default", "reports"))])

    def test_exact_names_are_polled_in_the_order_given(self) -> None:
        plan = plan_for(("reports", "default"), NAMES, set())
        self.assertEqual(plan, [("reports", ()), ("default", ())])

    def test_exact_names_need_not_exist_yet(self) -> None:
        self.assertEqual(plan_for(("new",), [], set()), [("new", ())])

    def test_a_prefix_expands_to_existing_queues(self) -> None:
        plan = plan_for(("reports", "mail*"), NAMES, set())
        self.assertEqual(plan, [("reports", ()), ("mail_bulk", ()), ("mail_fast", ())])

    def test_a_prefix_matching_nothing_adds_no_query(self) -> None:
        self.assertEqual(plan_for(("sms*",), NAMES, set()), [])

    def test_paused_queues_are_skipped(self) -> None:
        plan = plan_for(("reports", "mail*"), NAMES, {"reports", "mail_bulk"})
        self.assertEqual(plan, [("mail_fast", ())])

    def test_a_queue_named_twice_is_polled_once_at_its_first_place(self) -> None:
        plan = plan_for(("mail_fast", "mail*"), NAMES, set())
        self.assertEqual(plan, [("mail_fast", ()), ("mail_bulk", ())])
