"""From command-line options to a validated ``SupervisorConfig``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..options import recurrence, task_retention
from . import hooks, queue_caps
from .config import SupervisorConfig


def build_config(options: dict[str, Any]) -> SupervisorConfig:
    config = SupervisorConfig.from_settings()
    if options.get("mode"):
        config = replace(config, mode=options["mode"])
    if options.get("queues") or options.get("threads"):
        queues = tuple(q.strip() for q in (options.get("queues") or "").split(",") if q.strip())
        config = replace(
            config,
            workers=tuple(
                replace(
                    worker,
                    queues=queues or worker.queues,
                    threads=options.get("threads") or worker.threads,
                )
                for worker in config.workers
            ),
        )
    if options.get("only_work"):
        config = config.only("work")
    elif options.get("only_dispatch"):
        config = config.only("dispatch")
    return config


def problems(config: SupervisorConfig) -> list[str]:
    """Everything wrong with the configuration, recurring tasks and hooks."""
    return [
        *config.validate(),
        *recurrence.validate_recurring(),
        *hooks.validate(),
        *queue_caps.validate_settings(),
        *task_retention.validate_settings(),
    ]
