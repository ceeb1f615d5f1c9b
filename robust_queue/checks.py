"""System checks: backend and app wiring, database features, options,
``ROBUST_QUEUE``'s keys and values, and the modules that hold tasks.

``manage.py check`` runs them, and so does ``manage.py robust_queue``
(``--check`` too) before it looks at anything else.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from importlib.util import find_spec
from typing import Any

from django.conf import settings
from django.core import checks

from . import conf
from .compat import InvalidTask
from .exceptions import ConfigurationError
from .models.sql.listen_target import target_problems
from .options import discovery, sealing
from .options.encryption import ENCRYPTED
from .processes.config import SupervisorConfig
from .processes.launch import problems

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
        # Validating recurring tasks (and encrypted ones) imports the task
        # modules again.
        messages += _values() + _encryption()
    return messages + _opentelemetry() + _pooling()


@checks.register(TAG, checks.Tags.security, deploy=True)
def check_deploy(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """``check --deploy``: which models a stored job may load is unlimited."""
    if not conf.robust_queue_aliases() or conf.invalid_values():
        return []  # No queue; or check_settings reports the value.
    if conf.get(conf.ARGUMENT_MODELS) is not None:
        return []
    return [
        checks.Warning(
            "ROBUST_QUEUE['argument_models'] is not set: a model reference in a job's "
            "stored arguments may load a row of any installed model. Someone able to "
            "write the job table could hand any row (a User, say) to a task.",
            hint=(
                "List the models your tasks take, e.g. ROBUST_QUEUE['argument_models'] = "
                "['shop.order'] ([] for none); enqueue refuses any other with TypeError."
            ),
            id="robust_queue.W002",
        )
    ]


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


def _opentelemetry() -> list[checks.CheckMessage]:
    # running/tracing.py imports it when the setting is on.
    if not conf.get(conf.OPENTELEMETRY):
        return []
    try:
        if find_spec("opentelemetry.trace") is not None:
            return []
    except ImportError:  # no opentelemetry package at all
        pass
    return [
        checks.Error(
            "ROBUST_QUEUE['opentelemetry'] is True but the opentelemetry-api package "
            "is not installed.",
            hint="pip install 'robust-queue[otel]', or remove the setting.",
            id="robust_queue.E023",
        )
    ]


def _pooling() -> list[checks.CheckMessage]:
    """``pooled_databases`` and ``listen_database`` that name no database,
    a direct connection that is not PostgreSQL, a pooled database that
    keeps server-side cursors."""
    hint = "See 'Behind PgBouncer' in the deployment docs for the settings."
    return [
        checks.Error(problem, hint=hint, id="robust_queue.E026") for problem in target_problems()
    ]


def _encryption() -> list[checks.CheckMessage]:
    """Keys that are not Fernet keys, ``@encrypted`` tasks (in the task
    modules) with no keys, and either without the cryptography package."""
    keys = conf.get(conf.ENCRYPTION_KEYS)
    tasks = sorted(t.module_path for t in discovery.discover().tasks() if ENCRYPTED.of(t))
    if not keys and not tasks:
        return []
    problems = sealing.key_problems(keys)
    if tasks and not keys:
        problems.append(
            f"{', '.join(tasks)} {'is' if len(tasks) == 1 else 'are'} @encrypted but "
            f"{sealing.SETTING} is empty: their jobs can be neither enqueued nor run."
        )
    if find_spec("cryptography") is None:
        problems.append(
            f"Encrypted tasks need the cryptography package, which is not installed: "
            f"{sealing.INSTALL}."
        )
    hint = (
        "Make a key with: python -c 'from cryptography.fernet import Fernet; "
        "print(Fernet.generate_key().decode())' and list it, newest first, in "
        f"{sealing.SETTING} (from the environment, not the code)."
    )
    return [checks.Error(problem, hint=hint, id="robust_queue.E025") for problem in problems]


def _values() -> list[checks.CheckMessage]:
    try:
        config = SupervisorConfig.from_settings()
    except (ConfigurationError, TypeError, ValueError) as exc:
        return [checks.Error(f"Invalid ROBUST_QUEUE settings: {exc}", id="robust_queue.E023")]
    return [checks.Error(problem, id="robust_queue.E023") for problem in problems(config)]
