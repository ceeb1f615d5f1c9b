"""The supervisor's backlog of exits to record (no database: the records
here are plain callables that raise the errors a database would)."""

from __future__ import annotations

from unittest import mock

from django.db import DatabaseError, OperationalError
from django.test import SimpleTestCase

from robust_queue.processes import maintenance
from robust_queue.processes.maintenance import Backlog
from tests.unit.sql.support import dialect

LOCKED = OperationalError(1205, "Lock wait timeout exceeded; try restarting transaction")
DOWN = OperationalError(2013, "Lost connection to server during query")


class Record:
    """Fails with the given errors, in turn, then succeeds."""

    def __init__(self, name: str, ran: list[str], *errors: DatabaseError) -> None:
        self.name = name
        self.ran = ran
        self.errors = list(errors)

    def __call__(self) -> None:
        if self.errors:
            raise self.errors.pop(0)
        self.ran.append(self.name)


class BacklogTests(SimpleTestCase):
    def setUp(self) -> None:
        self.errors: list[DatabaseError] = []
        self.locks: list[DatabaseError] = []
        self.backlog = Backlog(self.errors.append, self.locks.append, using="default")
        # The errors below are MySQL's: classified by its dialect.
        mysql, _ = dialect("mysql")
        patcher = mock.patch.object(maintenance, "dialect_for", return_value=mysql)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.ran: list[str] = []

    def add(self, name: str, *errors: DatabaseError) -> None:
        self.backlog.add(Record(name, self.ran, *errors))

    def test_records_run_once_in_order(self) -> None:
        self.add("a")
        self.add("b")
        self.assertIs(self.backlog.flush(), True)
        self.assertIs(self.backlog.flush(), True)
        self.assertEqual(self.ran, ["a", "b"])
        self.assertEqual(len(self.backlog), 0)

    def test_an_outage_keeps_the_record_and_those_behind_it(self) -> None:
        self.add("a", DOWN)
        self.add("b")
        self.assertIs(self.backlog.flush(), False)
        self.assertEqual((self.ran, len(self.backlog), self.errors), ([], 2, [DOWN]))
        self.assertIs(self.backlog.flush(), True)
        self.assertEqual(self.ran, ["a", "b"])

    def test_a_record_whose_rows_are_locked_does_not_hold_up_the_others(self) -> None:
        """The wait is reported once, and is not an outage."""
        self.add("a", LOCKED, LOCKED)
        self.add("b")
        self.add("c", LOCKED)
        self.assertIs(self.backlog.flush(), False)
        self.assertEqual((self.ran, len(self.backlog)), (["b"], 2))
        self.assertIs(self.backlog.waiting_for_lock, True)
        self.assertIs(self.backlog.flush(), False)
        self.assertIs(self.backlog.flush(), True)
        self.assertEqual(self.ran, ["b", "c", "a"])
        self.assertIs(self.backlog.waiting_for_lock, False)
        self.assertEqual((self.locks, self.errors), ([LOCKED], []))

    def test_a_new_wait_is_reported_again(self) -> None:
        self.add("a", LOCKED)
        self.backlog.flush()
        self.backlog.flush()
        self.add("b", LOCKED)
        self.backlog.flush()
        self.assertEqual(self.locks, [LOCKED, LOCKED])

    def test_a_record_that_fails_otherwise_is_logged_and_dropped(self) -> None:
        """A row the code cannot handle is no outage: the others run, and the
        record is not tried every tick (pruning fails what it left)."""
        self.backlog.add(Record("a", self.ran, ValueError("bad row")), "Recording the exit of w1")  # type: ignore[arg-type]
        self.add("b")
        with self.assertLogs("robust_queue.processes.maintenance", "ERROR") as logs:
            self.assertIs(self.backlog.flush(), True)
        self.assertEqual((self.ran, len(self.backlog), self.errors), (["b"], 0, []))
        [line] = logs.output
        self.assertIn("Recording the exit of w1 failed; dropped", line)
        self.assertIn("ValueError: bad row", line)
