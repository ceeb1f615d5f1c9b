"""A PgBouncer in transaction pooling that only this test uses.

It runs on a free port of its own in front of the test's PostgreSQL server
(the one ``DATABASES["default"]`` names), from a temporary directory with
its pgbouncer.ini and userlist; restarting it disturbs no one else. A
machine without the ``pgbouncer`` binary skips these tests and says why;
with ``ROBUST_QUEUE_REQUIRE_PGBOUNCER=1`` the missing binary fails the run
instead, so CI (which installs it with scripts/system-deps.sh) never
skips them quietly.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path
from typing import Any

from django.db.models import Count, Q
from django.test import TransactionTestCase

from robust_queue.models import Job
from testproject.models import LedgerEntry
from tests.helpers import wait_until

from .servers import _accepts, free_port

BINARY_PLACES = ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer")


def pgbouncer_or_skip() -> str:
    """The pgbouncer binary, or skip the calling test with the reason."""
    found = shutil.which("pgbouncer") or next(
        (place for place in BINARY_PLACES if os.access(place, os.X_OK)), None
    )
    if found is not None:
        return found
    reason = "the pgbouncer binary is missing: run scripts/system-deps.sh"
    if os.environ.get("ROBUST_QUEUE_REQUIRE_PGBOUNCER") == "1":
        raise RuntimeError(f"PgBouncer tests required but {reason}")
    raise unittest.SkipTest(f"PgBouncer tests skipped: {reason}")


class PgBouncer:
    """``pool_mode = transaction`` in front of ``server`` (a DATABASES
    entry): every database name is passed through to that server."""

    def __init__(self, server: dict[str, Any], pool_size: int = 4) -> None:
        self.binary = pgbouncer_or_skip()
        self.dir = Path(tempfile.mkdtemp(prefix="rq-pgbouncer-"))
        self.port = free_port()
        self.popen: subprocess.Popen[bytes] | None = None
        user = server.get("USER") or "postgres"
        (self.dir / "userlist.txt").write_text(f'"{user}" ""\n')
        (self.dir / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host={server.get('HOST') or '127.0.0.1'} port={server.get('PORT') or 5432}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {self.dir / 'userlist.txt'}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {pool_size}\n"
            "max_client_conn = 500\n"
            "server_login_retry = 1\n"
        )
        if os.getuid() == 0:
            # PgBouncer refuses to run as root.
            shutil.chown(self.dir, "postgres")
        self.start()

    def start(self) -> None:
        log = (self.dir / "pgbouncer.log").open("ab")
        self.popen = subprocess.Popen(
            [self.binary, str(self.dir / "pgbouncer.ini")],
            stdout=log,
            stderr=subprocess.STDOUT,
            user="postgres" if os.getuid() == 0 else None,
            cwd=self.dir,
        )
        log.close()
        wait_until(lambda: _accepts(self.port), timeout=20, interval=0.05)

    def stop(self) -> None:
        """Stop at once: its server sessions end, its clients lose theirs."""
        if self.popen is not None and self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(10)
        self.popen = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def destroy(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def log(self) -> str:
        return (self.dir / "pgbouncer.log").read_text(errors="replace")

    def env(self) -> dict[str, str]:
        """Environment that points testproject.settings' default database
        at this PgBouncer (and declares it pooled)."""
        return {"ROBUST_QUEUE_DB_PORT": str(self.port)}


def assert_each_ran_at_most_once(test: TransactionTestCase, using: str, count: int) -> None:
    """``count`` jobs of ``record`` all ended after a fault, none ran twice.

    A body whose own write met the fault failed with it, and says so (its
    write may have committed before the answer was lost); every job that
    finished ran exactly once.
    """
    jobs = Job.objects.using(using)
    ended = Q(finished_at__isnull=False) | Q(failed_execution__isnull=False)
    wait_until(lambda: jobs.filter(ended).count() == count, 30)
    failed = jobs.filter(failed_execution__isnull=False)
    for job in failed:
        test.assertIn("OperationalError", str(job.failed_execution.error))
    test.assertLess(failed.count(), 10)
    runs = LedgerEntry.objects.using(using).values("key").annotate(n=Count("id"))
    test.assertEqual({row["n"] for row in runs}, {1})
    ledger = {row["key"] for row in runs}
    keys = set(jobs.filter(finished_at__isnull=False).values_list("return_value", flat=True))
    test.assertLessEqual(keys, ledger)
    test.assertLessEqual(len(ledger - keys), failed.count())
