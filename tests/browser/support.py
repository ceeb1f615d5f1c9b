"""Playwright, imported only when a browser test runs.

A machine without Playwright or Chromium skips the browser tier and says
why; with ``ROBUST_QUEUE_REQUIRE_BROWSER=1`` (``scripts/test.sh``) the
missing piece fails the run instead, so CI never skips it quietly.
"""

from __future__ import annotations

import os
import unittest
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

CHROMIUM = os.environ.get("ROBUST_QUEUE_CHROMIUM", "/usr/bin/chromium")


def playwright_or_skip() -> Callable[[], Any]:
    """``sync_playwright``, or skip the calling test class with the reason."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        _unavailable(f"Playwright is not installed ({exc}): pip install -r requirements/dev.txt")
    if not Path(CHROMIUM).exists():
        _unavailable(
            f"Chromium is not at {CHROMIUM}: run scripts/system-deps.sh "
            "or set ROBUST_QUEUE_CHROMIUM"
        )
    return sync_playwright


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("ROBUST_QUEUE_REQUIRE_BROWSER") == "1":
        raise RuntimeError(f"Browser tests required but {reason}")
    raise unittest.SkipTest(f"browser tests skipped: {reason}")
