"""Settings for a database behind a transaction pooler (PgBouncer): where
LISTEN connects, their checks, and no session state left behind."""

from __future__ import annotations

from unittest import skipIf

from django.db import connection
from django.test import SimpleTestCase, TransactionTestCase, override_settings
from django.utils import timezone

from robust_queue import checks
from robust_queue.models import Job
from robust_queue.models.sql import dialect_for
from robust_queue.models.sql.listen_target import listen_route
from robust_queue.processes.lock_wait import bounded_lock_wait
from testproject import tasks

DIRECT = "host=127.0.0.1 port=5432 dbname=app user=app password=s3cret"


def pooling_errors() -> list[str]:
    return [m.msg for m in checks.check_settings() if m.id == "robust_queue.E026"]


class ListenRouteTests(SimpleTestCase):
    def test_by_default_listen_uses_the_database_own_settings(self) -> None:
        route = listen_route("default")
        self.assertIs(route.polls, False)
        self.assertEqual(route.direct, "")

    @override_settings(ROBUST_QUEUE={"pooled_databases": ["default"]})
    def test_a_pooled_database_without_a_direct_connection_is_polled(self) -> None:
        self.assertIs(listen_route("default").polls, True)

    @override_settings(ROBUST_QUEUE={"pooled_databases": ["default"], "listen_database": DIRECT})
    def test_a_connection_string_is_the_queue_database_direct_connection(self) -> None:
        route = listen_route("default")
        self.assertEqual(route.params, {"conninfo": DIRECT, "prepare_threshold": None})
        # Named without its password.
        self.assertEqual(route.direct, "127.0.0.1:5432/app")
        self.assertIs(listen_route("queue").polls, False)

    @override_settings(
        ROBUST_QUEUE={
            "pooled_databases": ["default", "queue"],
            "listen_database": {"queue": "default"},
        }
    )
    def test_a_dict_names_a_direct_alias_per_database(self) -> None:
        self.assertIs(listen_route("default").polls, True)
        route = listen_route("queue")
        self.assertEqual(route.direct, "DATABASES['default']")
        self.assertEqual(route.params, connection.get_connection_params())


class PoolingCheckTests(SimpleTestCase):
    @override_settings(ROBUST_QUEUE={"pooled_databases": ["nope"], "listen_database": "gone"})
    def test_aliases_that_name_no_database_are_errors(self) -> None:
        self.assertEqual(
            pooling_errors(),
            [
                "ROBUST_QUEUE[\"pooled_databases\"] names 'nope', which is not in DATABASES.",
                "ROBUST_QUEUE[\"listen_database\"] is 'gone': neither a DATABASES alias nor a "
                'connection string ("host=... dbname=..." or "postgresql://...").',
            ],
        )

    @override_settings(ROBUST_QUEUE={"pooled_databases": ["default"]})
    def test_a_pooled_database_must_not_keep_server_side_cursors(self) -> None:
        [error] = pooling_errors()
        self.assertIn("DISABLE_SERVER_SIDE_CURSORS is not True", error)

    @override_settings(ROBUST_QUEUE={"listen_database": 5})
    def test_a_value_of_another_shape_is_an_error_naming_the_key(self) -> None:
        messages = [m.msg for m in checks.check_settings() if m.id == "robust_queue.E023"]
        self.assertEqual(
            messages,
            [
                'ROBUST_QUEUE["listen_database"] must be a non-empty string, or a dict of '
                "them by database alias, not 5."
            ],
        )

    @skipIf(connection.vendor == "postgresql", "the direct alias must not be PostgreSQL")
    @override_settings(ROBUST_QUEUE={"listen_database": "default"})
    def test_a_direct_alias_must_be_postgresql(self) -> None:
        [error] = pooling_errors()
        self.assertIn("LISTEN needs PostgreSQL", error)

    def test_no_setting_no_error(self) -> None:
        self.assertEqual(pooling_errors(), [])


@skipIf(connection.vendor != "postgresql", "PostgreSQL's session settings")
class NoSessionStateTests(TransactionTestCase):
    def test_the_bounded_lock_wait_never_changes_the_session(self) -> None:
        """Inside the block each statement's transaction sees the bound; the
        session (what a pooler hands the next client) never does."""
        raw = connection.cursor().cursor  # the driver's: no wrapper
        read = "SELECT current_setting('lock_timeout')"
        with bounded_lock_wait("default", 1), connection.cursor() as cursor:
            cursor.execute(read)
            self.assertEqual(cursor.fetchone()[0], "1s")
            raw.execute(read)
            self.assertEqual(raw.fetchone()[0], "0")

    @override_settings(ROBUST_QUEUE={"pooled_databases": ["default"]})
    def test_a_waiter_on_a_pooled_database_polls_without_listen(self) -> None:
        result = tasks.add.enqueue(1, 2)
        probe = dialect_for("default").finish_probe(result.id)
        self.addCleanup(probe.close)
        # No LISTEN, so the job is not marked for a NOTIFY at its finish.
        self.assertIs(Job.objects.get().awaited, False)
        self.assertIs(probe.is_finished(), False)
        probe.wait(0.01)
        Job.objects.update(finished_at=timezone.now())
        self.assertIs(probe.is_finished(), True)
