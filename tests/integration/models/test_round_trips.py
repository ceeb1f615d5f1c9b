"""MySQL/MariaDB: several statements in one text (models/sql/round_trips.py)
give each statement's outcome, and an error in any of them is Django's."""

from __future__ import annotations

from unittest import skipUnless

from django.db import IntegrityError, ProgrammingError, connection
from django.test import TransactionTestCase

from robust_queue.models import Pause
from robust_queue.models.sql.round_trips import send


@skipUnless(connection.vendor == "mysql", "MySQL/MariaDB's multi-statement texts")
class RoundTripTests(TransactionTestCase):
    def test_each_statement_gives_its_outcome_in_order(self) -> None:
        sent = send(
            connection,
            [
                (
                    "INSERT INTO robust_queue_pause (queue_name, created_at) VALUES (%s, NOW())",
                    ["a"],
                ),
                (
                    "INSERT INTO robust_queue_pause (queue_name, created_at) VALUES (%s, NOW())",
                    ["b"],
                ),
                ("SELECT queue_name FROM robust_queue_pause ORDER BY queue_name", []),
                ("DELETE FROM robust_queue_pause WHERE queue_name = %s", ["a"]),
            ],
        )
        self.assertEqual([s.rowcount for s in sent[:2]], [1, 1])
        self.assertEqual(sent[2].columns, ["queue_name"])
        self.assertEqual(sent[2].rows, (("a",), ("b",)))
        self.assertEqual(sent[3].rowcount, 1)
        self.assertEqual(list(Pause.objects.values_list("queue_name", flat=True)), ["b"])

    def test_an_error_after_the_first_statement_is_djangos_and_stops_the_text(self) -> None:
        with self.assertRaises(ProgrammingError):
            send(
                connection,
                [
                    (
                        "INSERT INTO robust_queue_pause (queue_name, created_at) VALUES ('a', NOW())",
                        [],
                    ),
                    ("SELECT * FROM robust_queue_no_such_table", []),
                    (
                        "INSERT INTO robust_queue_pause (queue_name, created_at) VALUES ('b', NOW())",
                        [],
                    ),
                ],
            )
        self.assertEqual(list(Pause.objects.values_list("queue_name", flat=True)), ["a"])
        # The session is ready for the next statement.
        self.assertEqual(send(connection, [("SELECT 1", [])])[0].rows, ((1,),))

    def test_a_value_refused_by_a_later_statement_is_an_integrity_error(self) -> None:
        """As Django's MySQL cursor makes of the first statement's refusal."""
        with self.assertRaises(IntegrityError):
            send(
                connection,
                [
                    ("SELECT 1", []),
                    (
                        "INSERT INTO robust_queue_pause (queue_name, created_at) VALUES (NULL, NOW())",
                        [],
                    ),
                ],
            )
        self.assertFalse(Pause.objects.exists())
