"""Typed, lazy reads of ``TASKS[alias]["OPTIONS"]`` and ``ROBUST_QUEUE``.

Nothing here runs at import: every value is read when it is asked for, so
``override_settings`` and late configuration work.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from difflib import get_close_matches
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

from .conversions import (
    as_is,
    duration,
    flag,
    job_log,
    model_labels,
    name_patterns,
    optional,
    positive_duration,
    positive_number,
    positive_seconds,
    regexes,
    seconds,
    text,
    text_or_texts_by_name,
    texts,
    time_limit,
    token,
)
from .exceptions import ConfigurationError

DEFAULT_DATABASE = "default"
DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024
DEFAULT_MAX_RETURN_VALUE_BYTES = 1024 * 1024

BACKEND_PATH = "robust_queue.backend.RobustQueueBackend"

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Key(Generic[T]):
    """One key of ``ROBUST_QUEUE``: its default, and how a given value is
    converted (``conversions.py``; a bad one raises ``ValueError``)."""

    name: str
    default: T
    convert: Callable[[Any], T]


# Every key of ROBUST_QUEUE, read only through ``get()``. Any other key is
# reported by the system check robust_queue.E020 and a value that does not
# convert by robust_queue.E023, so a misspelling is never ignored.
# Processes (config.py); each worker and dispatcher entry has the defaults
# of WorkerConfig / DispatcherConfig, the scheduler those of SchedulerConfig.
WORKERS: Key[Any] = Key("workers", ({},), as_is)
DISPATCHERS: Key[Any] = Key("dispatchers", ({},), as_is)
SCHEDULER: Key[Any] = Key("scheduler", {}, as_is)  # False or None: no scheduler
MODE = Key("mode", "fork", text)
PROCESS_HEARTBEAT_INTERVAL = Key("process_heartbeat_interval", 60.0, seconds)
PROCESS_ALIVE_THRESHOLD = Key("process_alive_threshold", 300.0, seconds)
SHUTDOWN_TIMEOUT = Key("shutdown_timeout", 5.0, seconds)
MAINTENANCE_INTERVAL = Key("maintenance_interval", 60.0, seconds)
# How long one supervisor tick may spend on retention; a pass resumes.
MAINTENANCE_BUDGET = Key("maintenance_budget", 0.5, positive_seconds)
SUPERVISOR_PIDFILE = Key("supervisor_pidfile", None, optional(text))
HOOKS: Key[Any] = Key("hooks", {}, as_is)
# Health (operations/table_health.py): a warning above these; None: never.
# Dead rows per live row of a queue table (PostgreSQL), counted from
# table_health.MIN_DEAD_ROWS dead rows; the age of the oldest open transaction.
HEALTH_DEAD_TUPLE_RATIO: Key[float | None] = Key(
    "health_dead_tuple_ratio", 1.0, optional(positive_number)
)
HEALTH_TRANSACTION_AGE: Key[float | None] = Key(
    "health_transaction_age", 300.0, optional(positive_seconds)
)
# None: the database of the first Robust Queue alias.
DATABASE = Key("database", None, optional(text))
# Behind a pooler in transaction mode (PgBouncer), docs/operations/databases.md:
# DATABASES aliases reached through one (no LISTEN on them), and a direct
# connection for LISTEN: a DATABASES alias or a libpq connection string
# for the queue's database, or a dict of them by database alias. Checked
# by robust_queue.E026 (models/sql/listen_target.py).
POOLED_DATABASES: Key[tuple[str, ...]] = Key("pooled_databases", (), texts)
LISTEN_DATABASE = Key("listen_database", None, optional(text_or_texts_by_name))
# Cluster-wide caps per queue (queue_caps.py): {"mail": {"max_concurrency": 5}}.
QUEUES: Key[Any] = Key("queues", {}, as_is)
# Tasks.
TASK_MODULES: Key[tuple[str, ...]] = Key("task_modules", (), texts)
ARGUMENT_MODELS = Key("argument_models", None, optional(model_labels))  # None: any model
RECURRING_TASKS: Key[Any] = Key("recurring_tasks", {}, as_is)
CLEAR_RECURRING_EXECUTIONS_AFTER = Key(
    "clear_recurring_executions_after", timedelta(days=7), positive_duration
)
DEFAULT_CONCURRENCY_CONTROL_PERIOD = Key(
    "default_concurrency_control_period", timedelta(minutes=3), positive_duration
)
# Time limits and cancellation (time_limits.py); None: no limit.
TIME_LIMIT = Key("time_limit", None, optional(time_limit))
CANCEL_GRACE_PERIOD = Key("cancel_grace_period", 10.0, time_limit)
INTERRUPT_GRACE_PERIOD = Key("interrupt_grace_period", 5.0, time_limit)
# How long a worker replaced for a body that ignored its interrupt waits
# for its other jobs before it stops as on TERM (worker.py).
RETIRE_TIMEOUT = Key("retire_timeout", 3600.0, time_limit)
# Retention.
PRESERVE_FINISHED_JOBS = Key("preserve_finished_jobs", True, flag)
CLEAR_FINISHED_JOBS_AFTER = Key("clear_finished_jobs_after", timedelta(days=1), duration)
CLEAR_FAILED_JOBS_AFTER = Key("clear_failed_jobs_after", None, optional(duration))
# Per task path (task_retention.py): {"finished": ..., "failed": ...}.
TASK_RETENTION: Key[Any] = Key("task_retention", {}, as_is)
# Statistics (statistics.py) and metrics (metrics/).
STATISTICS_RETENTION = Key("statistics_retention", timedelta(days=14), positive_duration)
STATISTICS_FLUSH_INTERVAL = Key("statistics_flush_interval", 5.0, positive_seconds)
# Seconds between two progress writes of one running job (running/progress.py).
PROGRESS_INTERVAL = Key("progress_interval", 2.0, seconds)
# A job's own log (running/job_logs.py) for every task that does not say
# otherwise (@job_log): None (off), or the lowest level captured.
JOB_LOG = Key("job_log", None, job_log)
METRICS_TOKEN = Key("metrics_token", None, optional(token))  # None: staff with view_metrics
# OpenTelemetry spans for enqueue and each attempt (running/tracing.py);
# needs the opentelemetry-api package (the "otel" extra).
OPENTELEMETRY = Key("opentelemetry", False, flag)
# Fernet keys for @encrypted tasks (options/sealing.py), newest first: the
# first encrypts, every one decrypts. Checked by robust_queue.E025, which
# never prints a key; needs the cryptography package (the "encrypted" extra).
ENCRYPTION_KEYS: Key[Any] = Key("encryption_keys", (), as_is)
# Masking (masking/): the admin, logs and metrics hide secrets. admin_mask
# is the list of secret names (or a callable); [] or None turns the built-in
# names and shapes off. mask_names and mask_values add to them. Why these
# names: each names a credential in the code and APIs people write
# (Django's SECRET_KEY and sessionid, OAuth's access_token and
# client_secret, HTTP's Authorization and Cookie, payment cards). A bare
# "key" is left out: cache keys, sort keys and dict keys are everyday
# arguments, and secret ones are named api_key, access_key, private_key or
# secret_key (matched) or have a known shape (masking/shapes.py).
ADMIN_MASK: Key[Any] = Key(
    "admin_mask",
    (
        "password",
        "passwd",
        "passphrase",
        "secret",
        "token",
        "api_key",
        "access_key",
        "private_key",
        "session_key",
        "sessionid",
        "authorization",
        "cookie",
        "credential",
        "jwt",
        "card",
        "cvv",
        "cvc",
        "ssn",
    ),
    as_is,
)
MASK_NAMES: Key[tuple[Any, ...]] = Key("mask_names", (), name_patterns)
MASK_VALUES: Key[tuple[Any, ...]] = Key("mask_values", (), regexes)

# The table of every Key defined above, by name.
KEYS: Mapping[str, Key[Any]] = MappingProxyType(
    {key.name: key for key in list(globals().values()) if isinstance(key, Key)}
)


def get(key: Key[T]) -> T:
    """The value of ``key``: the one set, converted, or the default.

    Raises ``ConfigurationError`` naming the key for a value that does not
    convert (the system checks report it first).
    """
    given = getattr(settings, "ROBUST_QUEUE", None) or {}
    if key.name not in given:
        return key.default
    try:
        return key.convert(given[key.name])
    except ValueError as exc:
        raise ConfigurationError(_problem(key.name, given[key.name], exc)) from None


# Values of ``cached()``, by key name.
_cached: dict[str, Any] = {}


def cached(key: Key[T]) -> T:
    """``get(key)``, read once per process: for a key read on every job.

    Read again after any ``setting_changed`` (``override_settings``; only
    tests change settings). A value that does not convert is not kept:
    each call raises.
    """
    try:
        return _cached[key.name]  # type: ignore[no-any-return]
    except KeyError:
        value = _cached[key.name] = get(key)
        return value


def _forget_cached(**kwargs: Any) -> None:
    _cached.clear()


setting_changed.connect(_forget_cached, dispatch_uid="robust_queue.conf.cached")


def alive_threshold() -> timedelta:
    """How long a process may go without a heartbeat and still count as
    alive (``process_alive_threshold``)."""
    return timedelta(seconds=get(PROCESS_ALIVE_THRESHOLD))


def robust_queue_settings() -> dict[str, Any]:
    """The ``ROBUST_QUEUE`` setting, or an empty dict."""
    value = getattr(settings, "ROBUST_QUEUE", None) or {}
    return dict(value)


def unknown_keys() -> list[str]:
    """Keys of ``ROBUST_QUEUE`` that Robust Queue does not read."""
    return sorted(str(key) for key in robust_queue_settings() if key not in KEYS)


def invalid_values() -> list[str]:
    """Why each value of ``ROBUST_QUEUE`` that does not convert is wrong."""
    problems = []
    for name, value in robust_queue_settings().items():
        key = KEYS.get(name)
        try:
            if key is not None:
                key.convert(value)
        except ValueError as exc:
            problems.append(_problem(name, value, exc))
    return problems


def _problem(name: str, value: Any, exc: ValueError) -> str:
    return f'ROBUST_QUEUE["{name}"] {exc}, not {value!r}.'


def backend_options(alias: str) -> dict[str, Any]:
    """The ``OPTIONS`` of one ``TASKS`` alias."""
    tasks = getattr(settings, "TASKS", None) or {}
    return dict(tasks.get(alias, {}).get("OPTIONS", {}) or {})


def robust_queue_aliases() -> list[str]:
    """Every ``TASKS`` alias whose backend is Robust Queue."""
    tasks = getattr(settings, "TASKS", None) or {}
    return [alias for alias, params in tasks.items() if params.get("BACKEND") == BACKEND_PATH]


def misspelt_backends() -> list[str]:
    """A message for each ``TASKS`` alias whose ``BACKEND`` looks like
    Robust Queue's path but does not import (``robust_queue.backends...``).

    Read before any app is ready (``apps.py``): Django's own checks and
    anything that declares a task would otherwise stop on it with a long
    traceback that does not name the setting.
    """
    tasks = getattr(settings, "TASKS", None) or {}
    messages = []
    for alias, params in tasks.items():
        given = params.get("BACKEND") if isinstance(params, Mapping) else None
        if not isinstance(given, str) or given == BACKEND_PATH:
            continue
        if not get_close_matches(given, [BACKEND_PATH], n=1, cutoff=0.8):
            continue
        try:
            import_string(given)
        except ImportError as exc:
            messages.append(
                f'TASKS["{alias}"]["BACKEND"] is {given!r}, which cannot be imported '
                f"({exc}). Did you mean {BACKEND_PATH!r}?"
            )
    return messages


def database_for(alias: str) -> str:
    """The database alias that holds the queue of one backend alias."""
    return str(backend_options(alias).get("database", DEFAULT_DATABASE))


def queue_database() -> str:
    """The database that processes work on: the first Robust Queue alias's."""
    explicit = get(DATABASE)
    if explicit:
        return explicit
    aliases = robust_queue_aliases()
    return database_for(aliases[0]) if aliases else DEFAULT_DATABASE


def max_payload_bytes(alias: str) -> int:
    options = backend_options(alias)
    return int(options.get("max_payload_bytes", DEFAULT_MAX_PAYLOAD_BYTES))


def max_return_value_bytes(alias: str) -> int:
    """The largest return value (as JSON) a task of ``alias`` may store."""
    options = backend_options(alias)
    return int(options.get("max_return_value_bytes", DEFAULT_MAX_RETURN_VALUE_BYTES))


def preserve_finished_jobs() -> bool:
    """Read on every finish: ``get(PRESERVE_FINISHED_JOBS)``."""
    return get(PRESERVE_FINISHED_JOBS)
