"""Lifecycle hooks: ``on_start`` / ``on_stop`` / ``on_exit`` per process kind.

Register with the decorators (``@on_start("worker")``) or in settings::

    ROBUST_QUEUE = {"hooks": {"worker": {"on_start": ["myapp.hooks.warm"]}}}

A hook receives the running process object. A hook that raises is logged
and does not stop the process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.utils.module_loading import import_string

from .. import conf
from ..exceptions import ConfigurationError

logger = logging.getLogger(__name__)

EVENTS = ("on_start", "on_stop", "on_exit")
KINDS = ("supervisor", "worker", "dispatcher", "scheduler")
Hook = Callable[[Any], None]

_REGISTERED: dict[tuple[str, str], list[Hook]] = {}


def _register(event: str, *kinds: str) -> Callable[[Hook], Hook]:
    unknown = [kind for kind in kinds if kind not in KINDS]
    if unknown:
        raise ConfigurationError(
            f"@{event}: unknown process kind(s) {unknown}; use {', '.join(KINDS)}."
        )

    def decorator(hook: Hook) -> Hook:
        for kind in kinds or KINDS:
            _REGISTERED.setdefault((kind, event), []).append(hook)
        return hook

    return decorator


def on_start(*kinds: str) -> Callable[[Hook], Hook]:
    return _register("on_start", *kinds)


def on_stop(*kinds: str) -> Callable[[Hook], Hook]:
    return _register("on_stop", *kinds)


def on_exit(*kinds: str) -> Callable[[Hook], Hook]:
    return _register("on_exit", *kinds)


def run(kind: str, event: str, process: Any) -> None:
    """Call every hook of ``kind``/``event``; errors are logged, not raised."""
    for hook in [*_REGISTERED.get((kind, event), []), *_from_settings(kind, event)]:
        try:
            hook(process)
        except Exception:
            logger.exception("%s hook %r of %s failed", event, hook, kind)


def validate() -> list[str]:
    errors = []
    for kind, events in (conf.get(conf.HOOKS) or {}).items():
        if kind not in KINDS:
            errors.append(f"hooks: unknown process kind {kind!r}")
            continue
        for event, paths in events.items():
            if event not in EVENTS:
                errors.append(f"hooks[{kind!r}]: unknown event {event!r}")
                continue
            for path in paths:
                try:
                    import_string(path)
                except ImportError as exc:
                    errors.append(f"hooks[{kind!r}][{event!r}]: {exc}")
    return errors


def _from_settings(kind: str, event: str) -> list[Hook]:
    paths = ((conf.get(conf.HOOKS) or {}).get(kind) or {}).get(event) or []
    return [import_string(path) for path in paths]
