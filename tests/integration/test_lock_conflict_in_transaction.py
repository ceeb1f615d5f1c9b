"""A lock conflict inside a caller's transaction is not retried."""

from __future__ import annotations

from django.db import OperationalError
from django.test import TestCase

from robust_queue.models.sql.deadlocks import retry_on_lock_conflict


class InsideATransactionTests(TestCase):
    """TestCase runs each test inside a transaction, as a caller's would be."""

    def test_a_conflict_inside_a_callers_transaction_is_raised_at_once(self) -> None:
        """The caller's transaction is broken: only it can start again."""
        calls = []

        def operation() -> None:
            calls.append(1)
            raise OperationalError(1213, "Deadlock")

        with self.assertRaises(OperationalError):
            retry_on_lock_conflict(operation, using="default", what="Cancel")
        self.assertEqual(calls, [1])
