"""Tags as task options and enqueue context (no database)."""

from __future__ import annotations

from django.test import SimpleTestCase

import robust_queue
from robust_queue.compat import TASK_TAKES_OPTIONS, task
from robust_queue.exceptions import ConfigurationError, EnqueueError
from robust_queue.options import tagging
from testproject import coordination_tasks as co


def _sample() -> None:
    """A task of this module's own: decorating it leaves the registry's
    declaration of the project's tasks alone."""


sample = task()(_sample)


class TagOptionTests(SimpleTestCase):
    def test_the_decorator_sets_sorted_distinct_tags(self) -> None:
        self.assertEqual(co.tagged.tags, ("billing", "eu"))  # type: ignore[attr-defined]
        self.assertEqual(robust_queue.tags("b", "a", "b")(sample).tags, ("a", "b"))  # type: ignore[attr-defined]

    def test_using_copies_keep_the_tags(self) -> None:
        self.assertEqual(co.tagged.using(priority=5).tags, ("billing", "eu"))  # type: ignore[attr-defined]

    def test_the_task_keyword_is_the_decorator(self) -> None:
        if not TASK_TAKES_OPTIONS:
            self.skipTest("Django 6.0's @task takes no backend options")
        self.assertEqual(co.tagged_by_keyword.tags, ("by-keyword",))  # type: ignore[attr-defined]
        with self.assertRaisesMessage(
            ConfigurationError, "@task(tags=...) takes a list of tags, not 'one'."
        ):
            task(tags="one")(lambda: None)

    def test_bad_tags_are_refused_when_declared(self) -> None:
        for names, message in (
            (("",), "tag '' is not a string of 1 to 100 characters without control characters"),
            (("x" * 101,), "is not a string of 1 to 100"),
            (("tab\there",), "'tab\\there' is not"),
            ((7,), "tag 7 is not"),
            (tuple(f"t{i}" for i in range(21)), "21 tags; a job takes at most 20"),
        ):
            with self.subTest(names=names), self.assertRaisesMessage(ConfigurationError, message):
                robust_queue.tags(*names)  # type: ignore[arg-type]

    def test_the_decorator_must_be_stacked_over_task(self) -> None:
        with self.assertRaisesMessage(ConfigurationError, "@tags must be stacked over @task"):
            robust_queue.tags("a")(lambda: None)  # type: ignore[arg-type]


class JobTagsContextTests(SimpleTestCase):
    def test_blocks_nest_and_add_to_the_task_tags(self) -> None:
        with robust_queue.job_tags("import-42") as outer:
            self.assertEqual(outer, ("import-42",))
            with robust_queue.job_tags("eu", "retry-run") as inner:
                self.assertEqual(inner, ("eu", "import-42", "retry-run"))
                self.assertEqual(
                    tagging.for_enqueue(co.tagged), ("billing", "eu", "import-42", "retry-run")
                )
            self.assertEqual(tagging.for_enqueue(co.tagged), ("billing", "eu", "import-42"))
        self.assertEqual(tagging.for_enqueue(co.tagged), ("billing", "eu"))

    def test_bad_tags_raise_at_the_block(self) -> None:
        with self.assertRaisesMessage(ConfigurationError, "job_tags(): tag '' is not"):
            with robust_queue.job_tags(""):
                pass

    def test_too_many_tags_together_are_refused_at_enqueue_time(self) -> None:
        with robust_queue.job_tags(*(f"t{i}" for i in range(19))):
            with self.assertRaisesMessage(EnqueueError, "21 tags; a job takes at most 20"):
                tagging.for_enqueue(co.tagged)
