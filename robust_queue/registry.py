"""Which code a job row may run (DESIGN §7).

A row never decides what code runs: a task path is imported only from a
module of an installed app or a module named in ``ROBUST_QUEUE
["task_modules"]``, and run only if it is a ``Task`` whose backend is a
Robust Queue backend.
"""

from __future__ import annotations

import re
from importlib import import_module

from django.apps import apps

from . import conf
from .compat import Task
from .exceptions import UnknownTaskError

_DOTTED_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


def resolve_task(task_path: str, backend_alias: str) -> Task:
    """The ``Task`` a job names, bound to ``backend_alias``.

    Raises ``UnknownTaskError`` for anything else, without importing a
    module that is not allowed.
    """
    if not isinstance(task_path, str) or not _DOTTED_PATH.match(task_path):
        raise UnknownTaskError(f"Task path {task_path!r} is not a dotted path.")
    module_name, _, attribute = task_path.rpartition(".")
    if not is_allowed_module(module_name):
        raise UnknownTaskError(
            f"Task path {task_path!r} is outside the installed apps and "
            "ROBUST_QUEUE['task_modules']; refusing to import it."
        )
    task = getattr(_import(module_name, task_path), attribute, None)
    if not isinstance(task, Task):
        raise UnknownTaskError(f"Task path {task_path!r} does not name a Task.")
    if backend_alias not in conf.robust_queue_aliases():
        raise UnknownTaskError(
            f"Backend {backend_alias!r} of task {task_path!r} is not a "
            "Robust Queue backend."
        )
    if task.backend != backend_alias:
        task = task.using(backend=backend_alias)
    return task


def is_allowed_module(module_name: str) -> bool:
    roots = [config.name for config in apps.get_app_configs()]
    roots += conf.task_modules()
    return any(
        module_name == root or module_name.startswith(root + ".") for root in roots
    )


def _import(module_name: str, task_path: str) -> object:
    try:
        return import_module(module_name)
    except ImportError as exc:
        raise UnknownTaskError(
            f"Task path {task_path!r}: module {module_name!r} cannot be imported."
        ) from exc
