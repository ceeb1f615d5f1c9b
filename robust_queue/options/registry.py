"""Which code a job row may run (DESIGN §7).

A row never decides what code runs. Tasks are recorded here when they are
declared with ``@task`` for a Robust Queue backend (the backend's
``validate_task`` calls ``register``), which happens as task modules are
imported: every installed app's ``tasks`` module and the modules of
``ROBUST_QUEUE["task_modules"]`` (``autodiscover``), and whatever those
import. A task path read from a row is only looked up here; nothing is
imported because a row names it.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import fields
from datetime import datetime
from importlib import import_module
from typing import Any, Protocol

from django.apps import apps
from django.utils.module_loading import autodiscover_modules

from .. import conf
from ..compat import InvalidTask, Task
from ..exceptions import UnknownTaskError
from .registry_aliases import AliasTable
from .registry_imports import warn_if_unimported
from .task import USING_FIELDS

logger = logging.getLogger(__name__)


class EnqueuedJob(Protocol):
    """What ``rebuild_task`` reads of a job row (``models.Job``)."""

    task_path: str
    backend_alias: str
    queue_name: str
    priority: int
    run_after: datetime | None


_FIX = (
    "Declare it with @task for a Robust Queue backend in an installed app's "
    "tasks module, or list its module in ROBUST_QUEUE['task_modules']."
)

# module_path -> the Task as declared (not a .using() copy).
_DECLARED: dict[str, Task[..., Any]] = {}
# alias (an old path) -> the module_path of the task that declares it.
_ALIASES = AliasTable()
_discovery = threading.RLock()
_discovered_for: tuple[str, ...] | None = None


def register(task: Task[..., Any]) -> None:
    """Record ``task`` as the declared task of its path.

    ``.using()`` copies share the declared function and options and change
    nothing; a decorator stacked over ``@task`` (a copy with an option
    set) or a new function under the same path (a re-imported module)
    replaces the declaration.
    """
    current = _DECLARED.get(task.module_path)
    if current is task:
        return  # Every enqueue of a declared task validates it again.
    if current is None or _declaration(current) != _declaration(task):
        # Its aliases first: a clash leaves the registry as it was.
        _ALIASES.claim(task, _DECLARED)
        _DECLARED[task.module_path] = task


def declared(task_path: str) -> Task[..., Any] | None:
    """The task registered under ``task_path`` or declaring it as an alias,
    if any (no rules applied)."""
    _ensure_discovered()
    return _lookup(task_path)


def declared_tasks() -> list[Task[..., Any]]:
    """Every declared task, by path (after discovery)."""
    _ensure_discovered()
    return [task for _, task in sorted(_DECLARED.items())]


def declared_aliases() -> list[tuple[str, str]]:
    """(alias, task path) of every alias a declared task runs, by alias
    (after discovery)."""
    _ensure_discovered()
    return _ALIASES.items()


def known_paths() -> set[str]:
    """Every path a job row may name and run: declared tasks' own paths
    and their aliases (after discovery)."""
    _ensure_discovered()
    return {*_DECLARED, *(alias for alias, _ in _ALIASES.items())}


def autodiscover() -> None:
    """Import each installed app's ``tasks`` module and the modules of
    ``ROBUST_QUEUE["task_modules"]``, registering their tasks.

    Raises ``ImportError`` if one of them cannot be imported.
    """
    global _discovered_for
    modules = conf.get(conf.TASK_MODULES)
    with _discovery:
        try:
            autodiscover_modules("tasks")
            for module in modules:
                import_module(module)
        finally:
            # Tried once per setting: a broken module is not retried (and
            # logged) for every job.
            _discovered_for = modules


def resolve_task(task_path: str, backend_alias: str) -> Task[..., Any]:
    """The declared ``Task`` of ``task_path``, bound to ``backend_alias``.

    Raises ``UnknownTaskError`` unless ``task_path`` names a task declared
    with ``@task`` for a Robust Queue backend in an allowed module and
    ``backend_alias`` is a Robust Queue backend. Imports nothing but the
    task modules of ``autodiscover`` (once per process).
    """
    _ensure_discovered()
    task = _DECLARED.get(task_path) if isinstance(task_path, str) else None
    if task is None and isinstance(task_path, str):
        task = _lookup(task_path)  # an alias (an old path) of a declared task
    if task is None:
        raise UnknownTaskError(
            f"Task path {task_path!r} names no task declared with @task for a "
            f"Robust Queue backend among the task modules imported at start-up. {_FIX}"
        )
    _check_module(task)
    if backend_alias not in conf.robust_queue_aliases():
        raise UnknownTaskError(
            f"Backend {backend_alias!r} of task {task_path!r} is not a Robust Queue backend."
        )
    return task if task.backend == backend_alias else _bound(task, backend_alias)


def rebuild_task(job: EnqueuedJob) -> Task[..., Any]:
    """The task of ``job`` as it was enqueued: its backend, queue,
    priority and ``run_after``.

    Raises ``UnknownTaskError`` if it cannot be resolved or rebuilt.
    """
    task = resolve_task(job.task_path, job.backend_alias)
    if (job.queue_name, job.priority, job.run_after) == (
        task.queue_name,
        task.priority,
        task.run_after,
    ):
        # Enqueued as declared (most jobs): the declaration itself, not a
        # copy that validates every option again (a worker does this per job).
        return task
    try:
        return task.using(queue_name=job.queue_name, priority=job.priority, run_after=job.run_after)
    except InvalidTask as exc:
        raise UnknownTaskError(
            f"Task {job.task_path!r} cannot run with queue {job.queue_name!r} and "
            f"priority {job.priority!r}: {exc}"
        ) from exc


def check_enqueue(task: Task[..., Any]) -> None:
    """Refuse a task that a worker could not run (the rule of
    ``resolve_task``, checked where the mistake is made).

    Raises ``InvalidTask`` naming the fix.
    """
    declared = _DECLARED.get(task.module_path)
    if declared is None or declared.func is not task.func:
        raise InvalidTask(
            f"Task {task.module_path} was not declared with @task for a Robust "
            f"Queue backend (it is a {type(task).__name__}); workers only run "
            "such tasks. Declare it with @task(backend=...) naming a Robust "
            "Queue alias."
        )
    try:
        _check_module(task)
    except UnknownTaskError as exc:
        raise InvalidTask(str(exc)) from exc
    # Allowed, but maybe never imported by a worker: a warning, once.
    warn_if_unimported(task.func.__module__)


def is_allowed_module(module_name: str) -> bool:
    """Whether ``module_name`` lies within an installed app or a module of
    ``ROBUST_QUEUE["task_modules"]``."""
    modules: tuple[str, ...] = conf.get(conf.TASK_MODULES)
    roots = [config.name for config in apps.get_app_configs()] + list(modules)
    return any(module_name == root or module_name.startswith(root + ".") for root in roots)


def _lookup(task_path: str) -> Task[..., Any] | None:
    # A declared path, else an alias of one.
    task = _DECLARED.get(task_path)
    if task is None:
        owner = _ALIASES.owner(task_path)
        task = _DECLARED.get(owner) if owner is not None else None
    return task


def _declaration(task: Task[..., Any]) -> list[Any]:
    # The function and options; not what .using() changes.
    return [getattr(task, field.name) for field in fields(task) if field.name not in USING_FIELDS]


def _check_module(task: Task[..., Any]) -> None:
    module = task.func.__module__
    if not is_allowed_module(module):
        raise UnknownTaskError(
            f"Task {task.module_path!r} is in module {module!r}, outside the "
            "installed apps and ROBUST_QUEUE['task_modules']: workers do not "
            f"import it. Move the task into an installed app or add {module!r} "
            "to ROBUST_QUEUE['task_modules']."
        )


def _bound(task: Task[..., Any], backend_alias: str) -> Task[..., Any]:
    # Another Robust Queue alias (enqueued with .using(backend=...)).
    try:
        return task.using(backend=backend_alias)
    except InvalidTask as exc:
        raise UnknownTaskError(
            f"Task {task.module_path!r} cannot run on backend {backend_alias!r}: {exc}"
        ) from exc


def _ensure_discovered() -> None:
    if _discovered_for == conf.get(conf.TASK_MODULES):
        return
    try:
        autodiscover()
    except ImportError:
        # --check and the supervisor's boot report it; a worker goes on
        # with the tasks it has.
        logger.exception("A task module cannot be imported")
