"""Show the output of the supervisors a failed process test started."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from .support import KEPT_LOGS


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
