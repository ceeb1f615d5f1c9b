"""Public ids never start with "-", which a command line reads as an option."""

from __future__ import annotations

from unittest import mock

from django.test import SimpleTestCase

from robust_queue.models.batch import new_batch_id
from robust_queue.models.job import new_result_id
from robust_queue.models.opaque import opaque_id


class OpaqueIdTests(SimpleTestCase):
    def test_a_drawn_id_starting_with_a_dash_is_drawn_again(self) -> None:
        """The first draw starts with "-": the second is returned."""
        draws = iter(["-starts-with-a-dash", "fine-id"])
        with mock.patch("secrets.token_urlsafe", side_effect=lambda n: next(draws)):
            self.assertEqual(opaque_id(32), "fine-id")

    def test_result_and_batch_ids_are_long_unguessable_and_never_options(self) -> None:
        """One id in 64 used to start with "-"; in 5,000 draws of each, none
        does, each has its full length, and none repeats."""
        for new, length in ((new_result_id, 43), (new_batch_id, 32)):
            with self.subTest(new=new.__name__):
                ids = [new() for _ in range(5000)]
                self.assertFalse([i for i in ids if i.startswith("-")])
                self.assertEqual({len(i) for i in ids}, {length})
                self.assertEqual(len(set(ids)), len(ids))
