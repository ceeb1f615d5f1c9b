"""System checks: backend and app wiring, database features, options,
``ROBUST_QUEUE``'s keys and values, and the modules that hold tasks.

``manage.py check`` runs them, and so does ``manage.py robust_queue``
(``--check`` too) before it looks at anything else.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.conf import settings
from django.core import checks

from . import conf, discovery
from .compat import InvalidTask
from .config import SupervisorConfig
from .exceptions import ConfigurationError
from .processes.launch import problems

if TYPE_CHECKING:
    from .backend import RobustQueueBackend

KNOWN_OPTIONS = {"database", "max_payload_bytes", "max_return_value_bytes"}
SIZE_OPTIONS = ("max_payload_bytes", "max_return_value_bytes")
TAG = "robust_queue"


@checks.register(TAG)
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Unknown ``ROBUST_QUEUE`` keys, bad values, task modules that fail."""
    messages = [*_unknown_keys()]
    invalid = conf.invalid_values()
    if invalid:
        # Everything below reads these values: they come first.
        return messages + [checks.Error(problem, id="robust_queue.E023") for problem in invalid]
    messages += _task_modules()
    if not any(message.id == "robust_queue.E021" for message in messages):
        # Validating recurring tasks imports the task modules again.
        messages += _values()
    return messages


def _unknown_keys() -> Iterator[checks.CheckMessage]:
    known = sorted(conf.KEYS)
    for key in conf.unknown_keys():
        close = difflib.get_close_matches(key, known, n=1)
        guess = f"Did you mean {close[0]!r}? " if close else ""
        yield checks.Error(
            f"ROBUST_QUEUE has unknown key {key!r}: it is ignored.",
            hint=f"{guess}Known keys: {', '.join(known)}.",
            id="robust_queue.E020",
        )


def _task_modules() -> Iterator[checks.CheckMessage]:
    for module, exc in discovery.discover().errors.items():
        yield checks.Error(
            f"The task module {module!r} cannot be imported"
            f"{discovery.where(module, exc)}: {type(exc).__name__}: {exc}",
            hint=_queues_hint() if isinstance(exc, InvalidTask) else None,
            id="robust_queue.E021",
        )


def _queues_hint() -> str:
    allowed = {
        alias: list(params.get("QUEUES", ["default"]))
        for alias, params in (getattr(settings, "TASKS", None) or {}).items()
        if alias in conf.robust_queue_aliases()
    }
    listed = "; ".join(f"TASKS[{a!r}]['QUEUES'] is {q!r}" for a, q in allowed.items() if q)
    return (
        f"A task there uses a queue its backend does not allow ({listed}). "
        "Add the queue to that list, or make it [] to allow any queue name."
    )


def _values() -> list[checks.CheckMessage]:
    try:
        config = SupervisorConfig.from_settings()
    except (ConfigurationError, TypeError, ValueError) as exc:
        return [checks.Error(f"Invalid ROBUST_QUEUE settings: {exc}", id="robust_queue.E023")]
    return [checks.Error(problem, id="robust_queue.E023") for problem in problems(config)]


def check_backend(backend: RobustQueueBackend) -> Iterator[checks.CheckMessage]:
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
