"""Which dialect a connection gets, and how long it is kept."""

from __future__ import annotations

import gc
import weakref

from django.db import NotSupportedError, connections
from django.test import SimpleTestCase

from robust_queue.models.sql import (
    MySQLDialect,
    PostgreSQLDialect,
    SQLiteDialect,
    dialect_for,
    dialect_of,
)

from .support import unconnected


class DialectChoiceTests(SimpleTestCase):
    def test_each_vendor_gets_its_own_dialect(self) -> None:
        """PostgreSQL, MySQL/MariaDB and SQLite each have a dialect."""
        for vendor, kind in (
            ("postgresql", PostgreSQLDialect),
            ("mysql", MySQLDialect),
            ("sqlite", SQLiteDialect),
        ):
            with self.subTest(vendor):
                self.assertIsInstance(dialect_of(unconnected(vendor)), kind)

    def test_a_connection_keeps_its_dialect(self) -> None:
        """The dialect is made once per connection, with its table names."""
        wrapper = unconnected("postgresql")
        first = dialect_of(wrapper)
        self.assertIs(dialect_of(wrapper), first)
        self.assertIs(first.tables, first.tables)
        self.assertIsNot(dialect_of(unconnected("postgresql")), first)

    def test_the_alias_names_this_threads_connection(self) -> None:
        """``dialect_for(alias)`` is the dialect of ``connections[alias]``."""
        self.assertIs(dialect_for("default"), dialect_of(connections["default"]))
        self.assertIs(dialect_for("default").connection, connections["default"])

    def test_a_dialect_does_not_keep_its_connection_alive(self) -> None:
        """A connection that is dropped (its thread ended) is collected."""
        wrapper = unconnected("mysql")
        made = weakref.ref(dialect_of(wrapper))
        gone = weakref.ref(wrapper)
        del wrapper
        gc.collect()
        self.assertIsNone(gone())
        self.assertIsNone(made())

    def test_an_unsupported_database_is_refused_by_name(self) -> None:
        """A vendor with no dialect gets an error that names it."""
        with self.assertRaisesMessage(NotSupportedError, "vendor 'unknown'"):
            dialect_of(unconnected("unknown"))
