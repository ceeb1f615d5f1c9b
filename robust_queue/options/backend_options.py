"""A backend's ``OPTIONS`` (``TASKS[alias]["OPTIONS"]``): the known
names and the checks ``RobustQueueBackend.check()`` runs on them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from django.apps import apps
from django.conf import settings
from django.core import checks


class ConfiguredBackend(Protocol):
    """What the checks read of a backend (``RobustQueueBackend``)."""

    @property
    def alias(self) -> str: ...

    @property
    def database(self) -> str: ...

    @property
    def options(self) -> Mapping[str, Any]: ...


KNOWN_OPTIONS = {"database", "max_payload_bytes", "max_return_value_bytes"}

SIZE_OPTIONS = ("max_payload_bytes", "max_return_value_bytes")


def check_backend(backend: ConfiguredBackend) -> Iterator[checks.CheckMessage]:
    """Misconfiguration of one ``TASKS`` alias, as Django check messages."""
    where = f"TASKS[{backend.alias!r}]"
    if not apps.is_installed("robust_queue"):
        yield checks.Error(
            f"{where} uses RobustQueueBackend but 'robust_queue' is not in INSTALLED_APPS.",
            hint="Add 'robust_queue' to INSTALLED_APPS.",
            id="robust_queue.E001",
        )
    if backend.database not in settings.DATABASES:
        yield checks.Error(
            f"{where}['OPTIONS']['database'] is {backend.database!r}, which is not in DATABASES.",
            id="robust_queue.E002",
        )
    for name in sorted(set(backend.options) - KNOWN_OPTIONS):
        yield checks.Error(
            f"{where}['OPTIONS'] has unknown option {name!r}.",
            hint=f"Known options: {', '.join(sorted(KNOWN_OPTIONS))}.",
            id="robust_queue.E003",
        )
    database = settings.DATABASES.get(backend.database, {})
    yield from check_sqlite_transactions(where, backend.database, database)
    for name in SIZE_OPTIONS:
        limit = backend.options.get(name, 1)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            yield checks.Error(
                f"{where}['OPTIONS'][{name!r}] must be a positive integer, not {limit!r}.",
                id="robust_queue.E004",
            )


def check_sqlite_transactions(
    where: str, alias: str, database: dict[str, Any]
) -> Iterator[checks.CheckMessage]:
    """Warn when the queue's SQLite database runs DEFERRED transactions."""
    # SQLite has no row locks: a claim reads ready rows and then writes, so
    # two DEFERRED transactions collide ("database is locked") where
    # IMMEDIATE ones take turns.
    if database.get("ENGINE") != "django.db.backends.sqlite3":
        return
    mode = database.get("OPTIONS", {}).get("transaction_mode")
    if str(mode).upper() != "IMMEDIATE":
        yield checks.Warning(
            f"{where} keeps its queue in SQLite database {alias!r}, whose "
            f"transaction_mode is {mode!r}: concurrent workers will fail "
            "claims with 'database is locked'.",
            hint=f"Set DATABASES[{alias!r}]['OPTIONS']['transaction_mode'] = 'IMMEDIATE'.",
            id="robust_queue.W001",
        )
