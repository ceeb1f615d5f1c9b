"""Shared set-up for benchmarks: Django on a throw-away database."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def setup_django(database: str, keepdb: bool = False) -> None:
    """Configure testproject settings for ``database`` and create its test
    DB (``keepdb``: reuse it if it exists, migrated), named
    ``$ROBUST_QUEUE_BENCH_DB`` if set."""
    sys.path.insert(0, str(ROOT))
    os.environ["ROBUST_QUEUE_TEST_DB"] = database
    os.environ.setdefault("ROBUST_QUEUE_DB_SUFFIX", "_bench")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")
    os.environ.setdefault("ROBUST_QUEUE_LOG_LEVEL", "WARNING")
    os.environ.setdefault("ROBUST_QUEUE_DEBUG", "0")
    import django

    django.setup()
    from django.db import connections

    if name := os.environ.get("ROBUST_QUEUE_BENCH_DB"):
        # A name of the caller's, apart from other runs on the same server.
        connections["default"].settings_dict["TEST"]["NAME"] = name
    connections["default"].creation.create_test_db(
        verbosity=0, autoclobber=not keepdb, keepdb=keepdb, serialize=False
    )


def teardown_django() -> None:
    from django.db import connections

    connection = connections["default"]
    connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0)


@contextmanager
def throwaway_database(database: str) -> Iterator[None]:
    """Django on a test database of ``database`` for the block, dropped after."""
    setup_django(database)
    try:
        yield
    finally:
        teardown_django()


def start_supervisor(
    config: dict[str, Any],
    *args: str,
    level: str = "WARNING",
    log: Path | None = None,
    append: bool = False,
) -> subprocess.Popen[bytes]:
    """``manage.py robust_queue`` (with ``args``) on the benchmark's
    database, configured by ``config``, logging at ``level``: to this
    process's output, or to ``log`` (from its start, or after what it holds
    with ``append``)."""
    from django.conf import settings

    env = dict(
        os.environ,
        ROBUST_QUEUE_DB_NAME=settings.DATABASES["default"]["NAME"],
        ROBUST_QUEUE_CONFIG_JSON=json.dumps(config),
        ROBUST_QUEUE_LOG_LEVEL=level,
    )
    command = [sys.executable, "manage.py", "robust_queue", *args]
    if log is None:
        return subprocess.Popen(command, cwd=ROOT, env=env)
    out = log.open("ab" if append else "wb")
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


@contextmanager
def timed() -> Iterator[Callable[[], float]]:
    start = time.perf_counter()
    elapsed: list[float] = []
    yield lambda: elapsed[0] if elapsed else time.perf_counter() - start
    elapsed.append(time.perf_counter() - start)


def server_pids() -> list[int]:
    """The PostgreSQL and MariaDB server processes on this machine."""
    found = subprocess.run(["pgrep", "-x", "postgres|mariadbd"], capture_output=True, text=True)
    return [int(pid) for pid in found.stdout.split()]


def process_tree(root: int) -> list[int]:
    """``root`` and its children."""
    children = subprocess.run(["pgrep", "-P", str(root)], capture_output=True, text=True)
    return [root] + [int(pid) for pid in children.stdout.split()]


def cpu_of(pids: list[int]) -> int:
    """utime + stime jiffies of ``pids`` (gone ones count as 0)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total


def per_job_cost(run: Callable[[], int]) -> str:
    """Run ``run`` (it returns how many jobs it did) and describe its cost
    per job: wall time, this process's CPU and the database server's CPU."""
    server = server_pids()
    wall, cpu, server_cpu = time.perf_counter(), time.process_time(), cpu_of(server)
    jobs = run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    server_ms = (cpu_of(server) - server_cpu) * 1000 / os.sysconf("SC_CLK_TCK")
    return (
        f"{wall / jobs * 1000:.2f} ms wall, {cpu / jobs * 1000:.2f} ms CPU + "
        f"{server_ms / jobs:.2f} ms database server per job ({jobs} jobs)"
    )


def instructions_of(args: list[str], suffix: str) -> tuple[int, str]:
    """Instructions that ``python -m <args>`` runs under valgrind
    (``cachegrind``, no cache simulation), and what it printed.

    ``suffix`` names its test database apart from other children running
    at once; every child gets the same hash seed, so dict and set orders
    repeat from run to run.
    """
    command = [
        "valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
        sys.executable, "-m", *args,
    ]  # fmt: skip
    suffix = os.environ.get("ROBUST_QUEUE_DB_SUFFIX", "") + suffix
    env = {**os.environ, "PYTHONHASHSEED": "0", "ROBUST_QUEUE_DB_SUFFIX": suffix}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode or not found:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return int(found.group(1).replace(",", "")), done.stdout


def conninfo() -> str:
    """A libpq connection string for the benchmark's PostgreSQL database
    (for a peer, or a bare client, that talks to it without Django)."""
    from django.db import connection

    settings = connection.settings_dict
    return (
        f"host={settings['HOST'] or '127.0.0.1'} port={settings['PORT'] or 5432} "
        f"user={settings['USER']} dbname={settings['NAME']}"
    )


def require_procrastinate(bench: str) -> None:
    """Exit naming the fix unless procrastinate is installed."""
    try:
        import procrastinate  # noqa: F401
    except ImportError:
        raise SystemExit(
            f"{bench} needs the peer: scripts/venv.sh peers (procrastinate 3)"
        ) from None
