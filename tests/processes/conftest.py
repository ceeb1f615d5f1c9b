"""Show the output of the supervisors a failed process test started; at
the end, stop what is still running for this run's database before it is
dropped."""

from __future__ import annotations

import asyncio
import os
import signal
import warnings
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections

from tests.helpers import wait_until

from .support import KEPT_LOGS, is_alive, started_for


@pytest.fixture(scope="session", autouse=True)
def nothing_left_running(django_db_setup: None) -> Iterator[None]:
    """A process a test started and that outlived it (a worker forked as
    its supervisor was killed notices only at its next beat), or asgiref's
    thread for sync code, would still be connected when the test database
    is dropped, which then fails and is left on the server. The thread's
    connection is closed; such processes are waited for a little, then
    killed, and named in a warning."""
    yield
    # aenqueue and await_result run their queries in asgiref's one thread
    # for sync code, whose connection stays open until that thread closes it.
    asyncio.run(sync_to_async(connections.close_all)())
    database = settings.DATABASES["default"]["NAME"]
    try:
        wait_until(lambda: not started_for(database), timeout=10)
    except AssertionError:
        left = started_for(database)
        names = [
            f"{_command_line(pid)} (after {_LEFT_BY.get(pid, 'the last test')})" for pid in left
        ]
        warnings.warn(f"still running for {database} at the end, killed: {names}", stacklevel=1)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        wait_until(lambda: not any(is_alive(pid) for pid in left), timeout=10)


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return f"pid {pid}"


# The test after which each process still ran, to name it at the end.
_LEFT_BY: dict[int, str] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    # Read before: the last test's teardown ends the session, which puts
    # the database's name back.
    database = settings.DATABASES["default"]["NAME"]
    yield
    for pid in started_for(database):
        _LEFT_BY.setdefault(pid, item.nodeid)


def pytest_runtest_setup(item: pytest.Item) -> None:
    KEPT_LOGS.clear()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for pid, output in KEPT_LOGS:
            report.sections.append((f"supervisor {pid} (and its children) output", output))
