"""Private database servers that a test may stop and start (outages).

Each server lives in a temporary directory on a free port, owned by the
test: restarting it disturbs no one else. PostgreSQL runs as the
``postgres`` OS user (initdb refuses root); MariaDB runs as root with its
own datadir, socket and port.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.db import connections
from django.test import override_settings

from tests.helpers import wait_until

DB_NAME = "rq_outage"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class PrivateServer:
    """A database server of one vendor that only this test uses."""

    vendor = ""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix=f"rq-{self.vendor}-"))
        self.port = free_port()

    def env(self) -> dict[str, str]:
        """Environment that points testproject.settings at this server."""
        raise NotImplementedError

    def database(self) -> dict[str, Any]:
        """A Django DATABASES entry for this server's database."""
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def destroy(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _wait_up(self) -> None:
        wait_until(lambda: _accepts(self.port), timeout=60, interval=0.1)

    def _wait_down(self) -> None:
        wait_until(lambda: not _accepts(self.port), timeout=60, interval=0.1)


class PrivatePostgreSQL(PrivateServer):
    vendor = "postgresql"

    def __init__(self) -> None:
        super().__init__()
        self.bin = Path(sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1])
        shutil.chown(self.dir, "postgres")
        self.data = self.dir / "data"
        self._as_postgres(
            str(self.bin / "initdb"),
            "-D",
            str(self.data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
        )
        self.start()
        self._as_postgres(
            str(self.bin / "createdb"),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-U",
            "postgres",
            DB_NAME,
        )

    def env(self) -> dict[str, str]:
        return {
            "ROBUST_QUEUE_TEST_DB": "postgresql",
            "PGHOST": "127.0.0.1",
            "PGPORT": str(self.port),
            "ROBUST_QUEUE_DB_NAME": DB_NAME,
        }

    def database(self) -> dict[str, Any]:
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": DB_NAME,
            "USER": "postgres",
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
        }

    def start(self) -> None:
        self._as_postgres(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.dir / "log"),
            "-o",
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off",
            "-w",
            "start",
        )
        self._wait_up()

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._as_postgres(
                str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"
            )
        self._wait_down()

    def _as_postgres(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
        subprocess.run([*prefix, *command], check=True, capture_output=True, cwd="/tmp")


class PrivateMariaDB(PrivateServer):
    vendor = "mariadb"

    def __init__(self) -> None:
        super().__init__()
        self.data = self.dir / "data"
        self.socket = self.dir / "mysqld.sock"
        self.popen: subprocess.Popen[bytes] | None = None
        subprocess.run(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={self.data}",
                "--user=root",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
            check=True,
            capture_output=True,
        )
        self.start()
        subprocess.run(
            [
                "mariadb",
                "--no-defaults",
                "-uroot",
                f"--socket={self.socket}",
                "-e",
                f"CREATE DATABASE {DB_NAME} CHARACTER SET utf8mb4; "
                "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; "
                "GRANT ALL ON *.* TO 'root'@'127.0.0.1'",
            ],
            check=True,
            capture_output=True,
        )

    def env(self) -> dict[str, str]:
        return {
            "ROBUST_QUEUE_TEST_DB": "mariadb",
            "MYSQL_HOST": "127.0.0.1",
            "MYSQL_PORT": str(self.port),
            "ROBUST_QUEUE_DB_NAME": DB_NAME,
        }

    def database(self) -> dict[str, Any]:
        return {
            "ENGINE": "django.db.backends.mysql",
            "NAME": DB_NAME,
            "USER": "root",
            "PASSWORD": "",
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "OPTIONS": {"charset": "utf8mb4", "isolation_level": "read committed"},
        }

    def start(self) -> None:
        log = open(self.dir / "log", "ab")  # noqa: SIM115 - the server keeps it
        self.popen = subprocess.Popen(
            [
                "mariadbd",
                "--no-defaults",
                f"--datadir={self.data}",
                "--user=root",
                f"--port={self.port}",
                "--bind-address=127.0.0.1",
                f"--socket={self.socket}",
                f"--pid-file={self.dir / 'mysqld.pid'}",
                "--skip-log-bin",
                "--innodb-flush-log-at-trx-commit=0",
                "--innodb-buffer-pool-size=32M",
            ],
            stdout=log,
            stderr=log,
        )
        log.close()
        self._wait_up()

    def stop(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=30)
        self._wait_down()


def private_server(vendor: str) -> PrivateServer:
    """Start a private server of ``vendor`` (postgresql or mariadb)."""
    started = time.monotonic()
    server = PrivatePostgreSQL() if vendor == "postgresql" else PrivateMariaDB()
    server.started_in = time.monotonic() - started  # type: ignore[attr-defined]
    return server


def serve_queue_from(test_class: Any, server: PrivateServer, alias: str) -> None:
    """For ``test_class`` (in its setUpClass): ``server``'s database as
    ``alias``, migrated, and the default task backend's queue on it."""
    default = dict(connections.settings["default"])
    configured = connections.configure_settings({"default": default, alias: server.database()})
    connections.settings[alias] = configured[alias]
    call_command("migrate", database=alias, verbosity=0)
    backend = {
        "BACKEND": "robust_queue.backend.RobustQueueBackend",
        "QUEUES": [],
        "OPTIONS": {"database": alias},
    }
    test_class.enterClassContext(override_settings(TASKS={"default": backend}))


def forget_alias(alias: str) -> None:
    """Close and remove an alias ``serve_queue_from`` added (tearDownClass)."""
    connections[alias].close()
    # The wrapper too: a later class may add the alias for another server.
    del connections[alias]
    del connections.settings[alias]
