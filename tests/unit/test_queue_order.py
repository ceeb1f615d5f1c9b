"""Fair polling: a worker's ``order`` and ``weights`` (no database)."""

from __future__ import annotations

from collections import Counter

from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import SimpleTestCase, override_settings

from robust_queue.checks import check_settings
from robust_queue.processes.config import SupervisorConfig, WorkerConfig
from robust_queue.processes.queue_order import Rotation
from robust_queue.processes.selector import plan_for


class OrderValidationTests(SimpleTestCase):
    def test_strict_is_the_default_and_valid(self) -> None:
        self.assertEqual(WorkerConfig().order, "strict")
        self.assertEqual(WorkerConfig().validate(), [])
        self.assertEqual(WorkerConfig(queues=("a", "b"), order="round_robin").validate(), [])

    def test_an_unknown_order_is_named(self) -> None:
        errors = WorkerConfig(order="fair").validate()
        self.assertEqual(
            errors,
            ["worker order must be one of 'strict', 'round_robin', 'weighted', not 'fair'"],
        )

    def test_weights_without_weighted_order_are_refused(self) -> None:
        errors = WorkerConfig(queues=("a",), order="round_robin", weights={"a": 2}).validate()
        self.assertEqual(errors, ["worker weights need order 'weighted', not 'round_robin'"])

    def test_weighted_needs_weights(self) -> None:
        errors = WorkerConfig(queues=("a", "b"), order="weighted").validate()
        self.assertEqual(len(errors), 1)
        self.assertIn("worker order 'weighted' needs weights", errors[0])

    def test_each_bad_weight_is_named(self) -> None:
        config = WorkerConfig(
            queues=("a", "mail*"),
            order="weighted",
            weights={"a": 0, "mail_fast": 2, "b": 1, "c": True, "bad name!": 1},
        )
        errors = config.validate()
        self.assertIn("worker weights['a'] must be a whole number >= 1, not 0", errors)
        self.assertIn(
            "worker weights name queue 'b', which the worker's queues ['a', 'mail*'] do not select",
            errors,
        )
        self.assertIn("worker weights['c'] must be a whole number >= 1, not True", errors)
        self.assertTrue(any("'bad name!'" in error for error in errors), errors)
        self.assertFalse(any("mail_fast" in error for error in errors), errors)

    def test_a_star_worker_may_weigh_any_queue(self) -> None:
        config = WorkerConfig(order="weighted", weights={"mail": 3})
        self.assertEqual(config.validate(), [])

    @override_settings(ROBUST_QUEUE={"workers": [{"queues": ["a", "b"], "order": "random"}]})
    def test_system_checks_and_check_command_report_a_bad_order(self) -> None:
        messages = [m for m in check_settings() if m.id == "robust_queue.E023"]
        self.assertEqual(len(messages), 1)
        self.assertIn("'random'", messages[0].msg)
        with self.assertRaisesMessage(SystemCheckError, "worker order must be one of"):
            call_command("check")

    @override_settings(
        ROBUST_QUEUE={"workers": [{"queues": ["a", "b"], "order": "weighted", "weights": {"a": 3}}]}
    )
    def test_settings_are_read(self) -> None:
        (worker,) = SupervisorConfig.from_settings().workers
        self.assertEqual((worker.order, worker.weights), ("weighted", {"a": 3}))


class RotationTests(SimpleTestCase):
    def test_strict_keeps_the_order_every_round(self) -> None:
        rotation = Rotation("strict")
        self.assertEqual([rotation.next(["a", "b", "c"]) for _ in range(3)], [["a", "b", "c"]] * 3)

    def test_round_robin_starts_each_round_at_the_next_queue(self) -> None:
        rotation = Rotation("round_robin")
        rounds = [rotation.next(["a", "b", "c"]) for _ in range(4)]
        self.assertEqual(
            rounds, [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]
        )

    def test_weighted_starts_in_proportion_and_spreads_the_starts(self) -> None:
        """Smooth weighted round robin: 3:1 is a, a, b, a — not a, a, a, b."""
        rotation = Rotation("weighted", {"a": 3, "b": 1})
        firsts = [rotation.next(["a", "b"])[0] for _ in range(8)]
        self.assertEqual(firsts, ["a", "a", "b", "a"] * 2)

    def test_weighted_gives_unweighted_queues_weight_one(self) -> None:
        rotation = Rotation("weighted", {"a": 2})
        firsts = Counter(rotation.next(["a", "b", "c"])[0] for _ in range(400))
        self.assertEqual(firsts, Counter({"a": 200, "b": 100, "c": 100}))

    def test_weighted_follows_the_first_with_the_most_owed(self) -> None:
        rotation = Rotation("weighted", {"a": 5, "b": 3, "c": 1})
        self.assertEqual(rotation.next(["a", "b", "c"]), ["a", "b", "c"])
        # a is owed 5 - 9 + 5 = 1, b 6, c 2.
        self.assertEqual(rotation.next(["a", "b", "c"]), ["b", "c", "a"])


class ExpandedPlanTests(SimpleTestCase):
    def test_star_expands_to_names_when_asked(self) -> None:
        plan = plan_for(("*",), ["a", "b", "c"], {"b"}, expand=True)
        self.assertEqual(plan, [("a", ()), ("c", ())])

    def test_star_alone_stays_one_query_otherwise(self) -> None:
        self.assertEqual(plan_for(("*",), ["a", "b"], set()), [(None, ())])
