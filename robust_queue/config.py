"""The runtime's configuration: frozen dataclasses read from ``ROBUST_QUEUE``.

Defaults mirror Solid Queue: one dispatcher (batch 500, every second), one
worker on every queue (3 threads, polling every 0.1 s), heartbeats every
minute, processes pruned after 5 minutes of silence, 5 s to shut down.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from . import conf

MODES = ("fork", "thread")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerConfig:
    queues: tuple[str, ...] = ("*",)
    threads: int = 3
    processes: int = 1
    polling_interval: float = 0.1

    def validate(self) -> list[str]:
        errors = _positive(self, "threads", "processes", "polling_interval")
        if not self.queues or not all(isinstance(q, str) and q for q in self.queues):
            errors.append(f"worker queues must be non-empty names, not {self.queues!r}")
        errors += [
            f"worker queue selector {q!r}: '*' may only end a name"
            for q in self.queues
            if "*" in q[:-1]
        ]
        return errors


@dataclass(frozen=True, slots=True, kw_only=True)
class DispatcherConfig:
    batch_size: int = 500
    polling_interval: float = 1.0
    concurrency_maintenance_interval: float = 600.0

    def validate(self) -> list[str]:
        return _positive(
            self, "batch_size", "polling_interval", "concurrency_maintenance_interval"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerConfig:
    polling_interval: float = 60.0
    # Enqueue the last slot missed while no scheduler ran (off: no back-fill).
    catch_up: bool = False

    def validate(self) -> list[str]:
        return _positive(self, "polling_interval")


@dataclass(frozen=True, slots=True, kw_only=True)
class SupervisorConfig:
    workers: tuple[WorkerConfig, ...] = (WorkerConfig(),)
    dispatchers: tuple[DispatcherConfig, ...] = (DispatcherConfig(),)
    scheduler: SchedulerConfig | None = field(default_factory=SchedulerConfig)
    mode: str = "fork"
    heartbeat_interval: float = 60.0
    alive_threshold: float = 300.0
    shutdown_timeout: float = 5.0
    maintenance_interval: float = 60.0
    pidfile: str | None = None
    database: str = conf.DEFAULT_DATABASE

    def validate(self) -> list[str]:
        errors = _positive(
            self, "heartbeat_interval", "alive_threshold", "maintenance_interval"
        )
        if self.shutdown_timeout < 0:
            errors.append(f"shutdown_timeout must be >= 0, not {self.shutdown_timeout!r}")
        if self.mode not in MODES:
            errors.append(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.alive_threshold <= self.heartbeat_interval:
            errors.append(
                "process_alive_threshold must be longer than "
                "process_heartbeat_interval, or live processes get pruned"
            )
        roles: list[WorkerConfig | DispatcherConfig | SchedulerConfig] = [
            *self.workers, *self.dispatchers
        ]
        if self.scheduler is not None:
            roles.append(self.scheduler)
        for role in roles:
            errors += role.validate()
        return errors

    def only(self, role: str) -> SupervisorConfig:
        """This configuration with only workers or only dispatchers."""
        if role == "work":
            return replace(self, dispatchers=(), scheduler=None)
        return replace(self, workers=())

    @classmethod
    def from_settings(cls, **overrides: Any) -> SupervisorConfig:
        """Build from ``ROBUST_QUEUE``; bad values surface in ``validate()``."""
        values = conf.robust_queue_settings()
        config = cls(
            workers=_roles(WorkerConfig, values.get("workers"), (WorkerConfig(),)),
            dispatchers=_roles(
                DispatcherConfig, values.get("dispatchers"), (DispatcherConfig(),)
            ),
            scheduler=_scheduler(values.get("scheduler", {})),
            mode=str(values.get("mode", "fork")),
            heartbeat_interval=float(values.get("process_heartbeat_interval", 60)),
            alive_threshold=float(values.get("process_alive_threshold", 300)),
            shutdown_timeout=float(values.get("shutdown_timeout", 5)),
            maintenance_interval=float(values.get("maintenance_interval", 60)),
            pidfile=values.get("supervisor_pidfile"),
            database=conf.queue_database(),
        )
        return replace(config, **overrides)


def _roles(kind: type, raw: Any, default: tuple[Any, ...]) -> tuple[Any, ...]:
    if raw is None:
        return default
    if not isinstance(raw, (list, tuple)):
        raise TypeError(f"ROBUST_QUEUE {kind.__name__} list expected, not {raw!r}")
    return tuple(_one(kind, item) for item in raw)


def _one(kind: type, item: Mapping[str, Any]) -> Any:
    item = dict(item)
    if "queues" in item:
        queues = item["queues"]
        item["queues"] = (queues,) if isinstance(queues, str) else tuple(queues)
    try:
        return kind(**item)
    except TypeError as exc:
        raise TypeError(f"ROBUST_QUEUE {kind.__name__}: {exc}") from exc


def _scheduler(raw: Any) -> SchedulerConfig | None:
    if raw is False or raw is None:
        return None
    return _one(SchedulerConfig, raw if isinstance(raw, Mapping) else {})


def _positive(config: Any, *names: str) -> list[str]:
    errors = []
    for name in names:
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            errors.append(f"{type(config).__name__}.{name} must be > 0, not {value!r}")
    return errors
