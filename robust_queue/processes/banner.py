"""The supervisor's start-up banner: what runs, against which database."""

from __future__ import annotations

from django.db import connections

from .. import __version__
from .config import SupervisorConfig


def banner(config: SupervisorConfig, *, scheduler: bool) -> list[str]:
    """One line per fact, for the log at start-up."""
    connection = connections[config.database]
    name = connection.settings_dict.get("NAME")
    lines = [
        f"Robust Queue {__version__}: supervisor in {config.mode} mode, database "
        f"{config.database!r} ({connection.display_name}, {name})",
    ]
    for index, worker in enumerate(config.workers, 1):
        limits = [
            f"max_jobs {worker.max_jobs}" if worker.max_jobs is not None else "",
            f"max_memory {worker.max_memory} MiB" if worker.max_memory is not None else "",
        ]
        recycling = ", ".join(limit for limit in limits if limit)
        lines.append(
            f"  worker {index}: queues {', '.join(worker.queues)}; "
            f"{worker.processes} process(es) x {worker.threads} thread(s); polling "
            f"{worker.polling_interval}s (idle up to {worker.idle_polling_ceiling}s)"
            + (f"; recycled at {recycling}" if recycling else "")
        )
    if not config.workers:
        lines.append("  no workers")
    for index, dispatcher in enumerate(config.dispatchers, 1):
        lines.append(
            f"  dispatcher {index}: batch {dispatcher.batch_size}, polling "
            f"{dispatcher.polling_interval}s"
        )
    if not config.dispatchers:
        lines.append("  no dispatchers: scheduled and retried jobs wait for one")
    if config.scheduler is None:
        lines.append("  scheduler: off")
    elif scheduler:
        lines.append(f"  scheduler: polling {config.scheduler.polling_interval}s")
    else:
        lines.append("  scheduler: not started (no recurring tasks)")
    lines.append(f"  pidfile: {config.pidfile or 'none'}")
    lines.append(
        f"  heartbeat every {config.heartbeat_interval}s, pruned after "
        f"{config.alive_threshold}s, shutdown timeout {config.shutdown_timeout}s"
    )
    return lines
