"""The runtime's configuration: frozen dataclasses read from ``ROBUST_QUEUE``.

Defaults mirror Solid Queue: one dispatcher (batch 500, every second), one
worker on every queue (3 threads, polling every 0.1 s), heartbeats every
minute, processes pruned after 5 minutes of silence, 5 s to shut down.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeGuard, TypeVar

from .. import conf
from ..options.validation import QUEUE_NAME_RULE, is_valid_queue_name
from . import queue_order

MODES = ("fork", "thread")
# A config dataclass built from one settings mapping.
C = TypeVar("C")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerConfig:
    queues: tuple[str, ...] = ("*",)
    threads: int = 3
    processes: int = 1
    polling_interval: float = 0.1
    # Recycling: after this many claimed jobs, or once the process's RSS
    # passes this many MiB, the worker finishes its running jobs and exits
    # 0; the supervisor starts a fresh one at once. None: never.
    max_jobs: int | None = None
    max_memory: float | None = None
    # An idle worker polls less often, up to this many seconds between
    # polls; any claim or NOTIFY resets it. At or below polling_interval:
    # no back-off.
    idle_polling_ceiling: float = 2.0
    # Whether a listener wakes the idle worker for a new job (PostgreSQL's
    # LISTEN; elsewhere a watch of the newest ready id, which reads it 20
    # times a second on MySQL/MariaDB). False: polling alone.
    listen: bool = True
    # Where each claim round starts (queue_order.py): "strict",
    # "round_robin" or "weighted" (with weights: queue name -> weight).
    order: str = queue_order.DEFAULT_ORDER
    weights: Mapping[str, int] | None = None
    # Outcomes a job thread could not write, waiting for the worker's
    # retrier: at this many the worker claims nothing until they drain.
    max_pending_finalizes: int = 10
    # Successes written together, one commit for up to this many (with
    # the next jobs' claim), waiting at most finish_window seconds for
    # more once one came (finisher.py). 1: each thread writes its own.
    # A batch never holds more than one success per thread.
    finish_batch: int = 10
    finish_window: float = 0.002

    def validate(self) -> list[str]:
        errors = _positive(self, "threads", "processes", "polling_interval", "finish_window")
        errors += _whole(self, "max_pending_finalizes", "finish_batch")
        errors += _positive(self, "idle_polling_ceiling")
        errors += queue_order.order_problems(self.order, self.weights, self.queues)
        errors += _optional_limit(self, "max_jobs", int, "a whole number of jobs")
        errors += _optional_limit(self, "max_memory", (int, float), "a size in MiB")
        if not isinstance(self.listen, bool):
            errors.append(f"WorkerConfig.listen must be True or False, not {self.listen!r}")
        if not self.queues or not all(isinstance(q, str) and q for q in self.queues):
            errors.append(f"worker queues must be non-empty names, not {self.queues!r}")
            return errors
        return errors + [_selector_error(q) for q in self.queues if _selector_error(q)]


@dataclass(frozen=True, slots=True, kw_only=True)
class DispatcherConfig:
    batch_size: int = 500
    polling_interval: float = 1.0
    concurrency_maintenance_interval: float = 600.0

    def validate(self) -> list[str]:
        return _positive(self, "batch_size", "polling_interval", "concurrency_maintenance_interval")


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerConfig:
    polling_interval: float = 60.0
    # Enqueue the last slot missed while no scheduler ran (off: no back-fill).
    catch_up: bool = False
    # Start even with no recurring task yet, for schedules added at runtime
    # (else the supervisor starts a scheduler only when there is one).
    always_start: bool = False

    def validate(self) -> list[str]:
        errors = _positive(self, "polling_interval")
        if not isinstance(self.always_start, bool):
            errors.append(
                f"SchedulerConfig.always_start must be True or False, not {self.always_start!r}"
            )
        return errors


@dataclass(frozen=True, slots=True, kw_only=True)
class SupervisorConfig:
    workers: tuple[WorkerConfig, ...] = (WorkerConfig(),)
    dispatchers: tuple[DispatcherConfig, ...] = (DispatcherConfig(),)
    scheduler: SchedulerConfig | None = field(default_factory=SchedulerConfig)
    # The defaults of the ROBUST_QUEUE keys (conf.py).
    mode: str = conf.MODE.default
    heartbeat_interval: float = conf.PROCESS_HEARTBEAT_INTERVAL.default
    alive_threshold: float = conf.PROCESS_ALIVE_THRESHOLD.default
    shutdown_timeout: float = conf.SHUTDOWN_TIMEOUT.default
    maintenance_interval: float = conf.MAINTENANCE_INTERVAL.default
    maintenance_budget: float = conf.MAINTENANCE_BUDGET.default
    pidfile: str | None = conf.SUPERVISOR_PIDFILE.default
    database: str = conf.DEFAULT_DATABASE

    def validate(self) -> list[str]:
        errors = _positive(self, "heartbeat_interval", "alive_threshold", "maintenance_interval")
        errors += self._budget_problems()
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
            *self.workers,
            *self.dispatchers,
        ]
        if self.scheduler is not None:
            roles.append(self.scheduler)
        for role in roles:
            errors += role.validate()
        if self.mode == "thread" and any(w.max_memory is not None for w in self.workers):
            errors.append(
                "WorkerConfig.max_memory needs mode 'fork': in thread mode every "
                "worker shares the supervisor's process, so recycling one "
                "frees no memory"
            )
        return errors

    def _budget_problems(self) -> list[str]:
        errors = _positive(self, "maintenance_budget")
        if not errors and self.maintenance_budget > self.heartbeat_interval:
            errors.append(
                "maintenance_budget must not be longer than "
                "process_heartbeat_interval, or the supervisor's heartbeat waits on it"
            )
        return errors

    def only(self, role: str) -> SupervisorConfig:
        """This configuration with only workers or only dispatchers."""
        if role == "work":
            return replace(self, dispatchers=(), scheduler=None)
        return replace(self, workers=())

    @classmethod
    def from_settings(cls, **overrides: Any) -> SupervisorConfig:
        """Build from ``ROBUST_QUEUE``; bad values surface in ``validate()``.

        Raises ``ConfigurationError`` for a value that does not convert and
        ``TypeError`` for a role entry that is not a list of dicts.
        """
        config = cls(
            workers=_roles(WorkerConfig, conf.get(conf.WORKERS)),
            dispatchers=_roles(DispatcherConfig, conf.get(conf.DISPATCHERS)),
            scheduler=_scheduler(conf.get(conf.SCHEDULER)),
            mode=conf.get(conf.MODE),
            heartbeat_interval=conf.get(conf.PROCESS_HEARTBEAT_INTERVAL),
            alive_threshold=conf.get(conf.PROCESS_ALIVE_THRESHOLD),
            shutdown_timeout=conf.get(conf.SHUTDOWN_TIMEOUT),
            maintenance_interval=conf.get(conf.MAINTENANCE_INTERVAL),
            maintenance_budget=conf.get(conf.MAINTENANCE_BUDGET),
            pidfile=conf.get(conf.SUPERVISOR_PIDFILE),
            database=conf.queue_database(),
        )
        return replace(config, **overrides)


def _roles(kind: type, raw: Any) -> tuple[Any, ...]:
    if raw is None:
        # As if unset: one role with the defaults.
        return (kind(),)
    if not isinstance(raw, (list, tuple)):
        raise TypeError(f"ROBUST_QUEUE {kind.__name__} list expected, not {raw!r}")
    return tuple(_one(kind, item) for item in raw)


def _one(kind: type[C], item: Mapping[str, Any]) -> C:
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


def _selector_error(selector: str) -> str:
    """Why a worker's queue selector is invalid; empty if it is valid.

    ``*``, a queue name, or a queue name's prefix followed by ``*``.
    """
    if selector == "*":
        return ""
    if "*" in selector[:-1]:
        return f"worker queue selector {selector!r}: '*' may only end a name"
    name = selector.removesuffix("*")
    if is_valid_queue_name(name):
        return ""
    return f"worker queue selector {selector!r}: a queue name is {QUEUE_NAME_RULE}"


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _optional_limit(config: Any, name: str, kinds: type | tuple[type, ...], what: str) -> list[str]:
    """``name`` is None (no limit) or a positive ``kinds`` value."""
    value = getattr(config, name)
    if value is None:
        return []
    if not isinstance(value, kinds) or not _is_number(value) or value <= 0:
        return [
            f"{type(config).__name__}.{name} must be {what} > 0 or None (no limit), not {value!r}"
        ]
    return []


def _positive(config: Any, *names: str) -> list[str]:
    errors = []
    for name in names:
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            errors.append(f"{type(config).__name__}.{name} must be > 0, not {value!r}")
    return errors


def _whole(config: Any, *names: str) -> list[str]:
    """Each of ``names`` is a whole number > 0."""
    errors = []
    for name in names:
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            errors.append(
                f"{type(config).__name__}.{name} must be a whole number > 0, not {value!r}"
            )
    return errors
