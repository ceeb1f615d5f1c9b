"""The PostgreSQL server restarted behind PgBouncer in transaction pooling.

PgBouncer stays up in front of a private server of the test's own
(``servers.py``), which is stopped and started while the supervisor
drains through it: PgBouncer's server sessions end, its clients' next
transactions fail or wait, and every job still runs at most once.
"""

from __future__ import annotations

from typing import ClassVar
from unittest import skipIf

from django.db import connection, connections
from django.test import TransactionTestCase

from robust_queue.models import Job
from testproject import tasks
from tests.helpers import wait_until

from .pgbouncer import PgBouncer, assert_each_ran_at_most_once
from .servers import PrivateServer, forget_alias, private_server, serve_queue_from
from .support import Supervisor

PRIVATE = "private_behind_pgbouncer"
WORKERS = [{"queues": ["*"], "threads": 3, "polling_interval": 0.05, "idle_polling_ceiling": 0.5}]


@skipIf(connection.vendor != "postgresql", "PgBouncer pools PostgreSQL connections")
class ServerRestartedBehindPgBouncerTests(TransactionTestCase):
    databases: ClassVar[set[str]] = {"default", PRIVATE}  # type: ignore[misc]
    server: ClassVar[PrivateServer]
    bouncer: ClassVar[PgBouncer]

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = private_server("postgresql")
        cls.addClassCleanup(cls.server.destroy)
        cls.bouncer = PgBouncer(cls.server.database())
        cls.addClassCleanup(cls.bouncer.destroy)
        serve_queue_from(cls, cls.server, PRIVATE)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        forget_alias(PRIVATE)

    def test_every_job_runs_at_most_once_and_the_drain_goes_on(self) -> None:
        for n in range(150):
            tasks.record.enqueue(f"job-{n}")
        supervisor = Supervisor(
            self,
            env={**self.server.env(), **self.bouncer.env()},
            using=PRIVATE,
            workers=WORKERS,
            pooled_databases=["default"],
        )
        finished = Job.objects.using(PRIVATE).filter(finished_at__isnull=False)
        wait_until(lambda: finished.count() >= 20, 30)
        connections[PRIVATE].close()
        self.server.stop()
        self.server.start()
        for n in range(150, 200):
            tasks.record.enqueue(f"job-{n}")
        assert_each_ran_at_most_once(self, PRIVATE, 200)
        self.assertIsNone(supervisor.popen.poll())
