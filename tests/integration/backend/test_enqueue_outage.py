"""Enqueue while the database is gone: the error reaches the caller."""

from __future__ import annotations

from unittest import skipIf

from django.db import DatabaseError, connection, connections
from django.test import TransactionTestCase

from robust_queue.models import Job
from testproject import tasks

_OWN_ID = {"postgresql": "SELECT pg_backend_pid()", "mysql": "SELECT CONNECTION_ID()"}
_KILL = {"postgresql": "SELECT pg_terminate_backend(%s)", "mysql": "KILL CONNECTION %s"}


@skipIf(connection.vendor == "sqlite", "SQLite has no server session to lose")
class EnqueueOutageTests(TransactionTestCase):
    def test_a_lost_connection_raises_the_database_error_and_writes_nothing(self) -> None:
        """Enqueue neither swallows nor retries a database error: the
        caller sees it, and no job exists."""
        with connection.cursor() as cursor:
            cursor.execute(_OWN_ID[connection.vendor])
            (session,) = cursor.fetchone()
        other = connections.create_connection("default")
        try:
            with other.cursor() as cursor:
                cursor.execute(_KILL[connection.vendor], [session])
        finally:
            other.close()
        with self.assertRaises(DatabaseError):
            tasks.add.enqueue(1, 2)
        connection.close()
        self.assertFalse(Job.objects.exists())
