"""Logging to stderr for ``manage.py robust_queue`` when the project has none.

A project whose ``LOGGING`` names the ``robust_queue`` logger (or one below
it), or that gives the root logger a handler, keeps its own configuration:
nothing is added and ``-v`` changes nothing. Otherwise Robust Queue's
loggers print to stderr, at the level ``-v`` picks.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from django.conf import settings

LOGGER = "robust_queue"
FORMAT = "%(asctime)s %(levelname)-7s [%(process)d] %(message)s"
# -v 0..3
LEVELS = {0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG, 3: logging.DEBUG}


def project_configures_logging() -> bool:
    """Whether the project's own ``LOGGING`` decides where our logs go."""
    config: Any = getattr(settings, "LOGGING", None) or {}
    loggers = config.get("loggers", {}) if isinstance(config, dict) else {}
    if any(name == LOGGER or name.startswith(LOGGER + ".") for name in loggers):
        return True
    return bool(logging.getLogger().handlers)


def configure(verbosity: int) -> bool:
    """Send Robust Queue's logs to stderr at ``verbosity``'s level, unless
    the project configures them; True if it did."""
    if project_configures_logging():
        return False
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    logger = logging.getLogger(LOGGER)
    logger.addHandler(handler)
    logger.setLevel(LEVELS.get(verbosity, logging.DEBUG))
    # Ours alone: an outer handler added later must not print them twice.
    logger.propagate = False
    return True
