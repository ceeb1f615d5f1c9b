"""Which errors are a server refusing a value for good, though their class
says transient (``Dialect.refuses_value``); built without a database."""

from __future__ import annotations

from unittest import mock

from django.db import OperationalError
from django.test import SimpleTestCase

from .support import dialect


class MySQLRefusalTests(SimpleTestCase):
    def setUp(self) -> None:
        self.dialect, _ = dialect("mysql")

    def test_a_statement_over_the_packet_limit_is_refused(self) -> None:
        error = OperationalError(1153, "Got a packet bigger than 'max_allowed_packet'")
        self.assertIs(self.dialect.refuses_value(error, "x"), True)

    def test_a_lost_connection_is_a_refusal_only_for_a_value_over_the_limit(self) -> None:
        for code in (2006, 2013):
            for over in (True, False):
                with self.subTest(code=code, over=over):
                    with mock.patch.object(
                        self.dialect, "_is_over_packet_limit", return_value=over
                    ) as asked:
                        refused = self.dialect.refuses_value(OperationalError(code, "gone"), "x")
                    self.assertIs(refused, over)
                    asked.assert_called_once_with("x")

    def test_other_errors_are_not_refusals(self) -> None:
        with mock.patch.object(self.dialect, "_is_over_packet_limit") as asked:
            for error in (OperationalError(1213, "Deadlock"), OperationalError("no code")):
                with self.subTest(error=error):
                    self.assertIs(self.dialect.refuses_value(error, "x"), False)
        asked.assert_not_called()


class OtherVendorsRefusalTests(SimpleTestCase):
    def test_postgresql_and_sqlite_have_no_such_refusal(self) -> None:
        for vendor in ("postgresql", "sqlite"):
            with self.subTest(vendor=vendor):
                other, _ = dialect(vendor)
                error = OperationalError(1153, "packet")
                self.assertIs(other.refuses_value(error, "x"), False)
