"""ROBUST_QUEUE["queues"]: validation and how capped queues are planned."""

from __future__ import annotations

from django.test import SimpleTestCase, override_settings

from robust_queue.checks import check_settings
from robust_queue.processes import queue_caps
from robust_queue.processes.selector import plan_for

NAMES = ["default", "mail", "reports"]


class QueueCapSettingsTests(SimpleTestCase):
    @override_settings(ROBUST_QUEUE={"queues": {"mail": {"max_concurrency": 5}, "bulk": {}}})
    def test_caps_maps_capped_queues_to_their_limit(self) -> None:
        self.assertEqual(queue_caps.validate_settings(), [])
        self.assertEqual(queue_caps.caps(), {"mail": 5})

    def test_no_setting_caps_nothing(self) -> None:
        self.assertEqual(queue_caps.caps(), {})

    def _problems(self, queues: object) -> list[str]:
        with override_settings(ROBUST_QUEUE={"queues": queues}):
            problems = queue_caps.validate_settings()
            self.assertEqual(queue_caps.caps(), {}, "a bad setting caps nothing")
            return problems

    def test_each_bad_value_is_named(self) -> None:
        cases = {
            "must be a dict of queue name -> options, not ['mail']": ["mail"],
            """ROBUST_QUEUE["queues"]['mail']["max_concurrency"] must be a whole number >= 1 """
            """or None (no cap), not 0""": {"mail": {"max_concurrency": 0}},
            "not True": {"mail": {"max_concurrency": True}},
            "not 2.5": {"mail": {"max_concurrency": 2.5}},
            "not '5'": {"mail": {"max_concurrency": "5"}},
            "has unknown option 'max_concurency' (known: max_concurrency)": {
                "mail": {"max_concurency": 5}
            },
            "has queue name 'm a i l': a queue name is": {"m a i l": {"max_concurrency": 1}},
            "must be a dict of options such as max_concurrency, not 5": {"mail": 5},
        }
        for expected, queues in cases.items():
            with self.subTest(queues=queues):
                [problem] = self._problems(queues)
                self.assertIn(expected, problem)

    @override_settings(ROBUST_QUEUE={"queues": {"mail": {"max_concurrency": -1}}})
    def test_the_system_check_reports_it(self) -> None:
        [message] = check_settings()
        self.assertEqual(message.id, "robust_queue.E023")
        self.assertIn('["max_concurrency"] must be a whole number >= 1', message.msg)


class CappedPlanTests(SimpleTestCase):
    def test_star_claims_capped_queues_first_then_the_rest_in_one_query(self) -> None:
        plan = plan_for(("*",), NAMES, set(), {"mail", "bulk"})
        self.assertEqual(plan, [("bulk", ()), ("mail", ()), (None, ("bulk", "mail"))])

    def test_a_paused_capped_queue_is_skipped(self) -> None:
        plan = plan_for(("*",), NAMES, {"mail"}, {"mail"})
        self.assertEqual(plan, [(None, ("mail",))])

    def test_named_queues_keep_their_order(self) -> None:
        plan = plan_for(("reports", "mail"), NAMES, set(), {"mail"})
        self.assertEqual(plan, [("reports", ()), ("mail", ())])
