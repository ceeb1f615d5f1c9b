"""Connection wrappers that are never connected, for building statements.

Each points at a server or file that does not exist, so a statement
builder that reached for the database would fail its test.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.utils import load_backend

from robust_queue.models.sql import Dialect, dialect_of

ENGINES = {
    "postgresql": "django.db.backends.postgresql",
    "mysql": "django.db.backends.mysql",
    "sqlite": "django.db.backends.sqlite3",
    "unknown": "django.db.backends.dummy",
}
NOW = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def unconnected(vendor: str, alias: str = "unit") -> BaseDatabaseWrapper:
    """A wrapper of ``vendor``'s backend whose server cannot be reached."""
    settings: dict[str, Any] = {
        "ENGINE": ENGINES[vendor],
        "NAME": "/nonexistent/robust-queue-unit",
        "HOST": "127.0.0.1",
        "PORT": "1",
        "USER": "nobody",
    }
    [configured] = connections.configure_settings({"default": settings}).values()
    wrapper: BaseDatabaseWrapper = load_backend(ENGINES[vendor]).DatabaseWrapper(configured, alias)
    return wrapper


def dialect(vendor: str) -> tuple[Dialect, BaseDatabaseWrapper]:
    """A dialect and its wrapper (keep the wrapper: the dialect holds it weakly)."""
    wrapper = unconnected(vendor)
    return dialect_of(wrapper), wrapper
