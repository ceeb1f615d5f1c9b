"""The modules that hold tasks, imported one by one so a failure names its module.

They are every installed app's ``tasks`` module and the modules listed in
``ROBUST_QUEUE["task_modules"]`` (the places ``@recurring`` tasks are found
too). The system checks report a module that does not import; start-up and
``--check`` read the queues of the tasks found in the others.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path
from types import ModuleType
from typing import Any

from django.apps import apps
from django.utils.module_loading import module_has_submodule

from .. import conf
from ..compat import Task


@dataclass(slots=True)
class Discovery:
    """The task modules that imported, and the error of each that did not."""

    modules: list[ModuleType] = field(default_factory=list)
    errors: dict[str, BaseException] = field(default_factory=dict)

    def tasks(self) -> list[Task[..., Any]]:
        """Every ``Task`` of a Robust Queue backend defined in the modules."""
        aliases = set(conf.robust_queue_aliases())
        found: dict[int, Task[..., Any]] = {}
        for module in self.modules:
            for value in vars(module).values():
                if isinstance(value, Task) and value.backend in aliases:
                    found[id(value)] = value
        return list(found.values())


def task_module_names() -> list[str]:
    """Each installed app's ``tasks`` module, then ``task_modules``."""
    names = [
        f"{config.name}.tasks"
        for config in apps.get_app_configs()
        if module_has_submodule(config.module, "tasks")
    ]
    return names + [name for name in conf.get(conf.TASK_MODULES) if name not in names]


def discover() -> Discovery:
    """Import every task module; never raises for one that fails."""
    found = Discovery()
    for name in task_module_names():
        try:
            found.modules.append(import_module(name))
        except Exception as exc:  # noqa: BLE001 - reported by the checks
            found.errors[name] = exc
    return found


def where(module_name: str, exc: BaseException) -> str:
    """``" (app/tasks.py, line 18)"``: the line of the module that raised."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f" ({_relative(exc.filename)}, line {exc.lineno})"
    try:
        spec = find_spec(module_name)
    except (ImportError, ValueError):
        return ""
    origin = spec.origin if spec else None
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if origin and frame.filename == origin
    ]
    if not frames:
        return ""
    return f" ({_relative(frames[-1].filename)}, line {frames[-1].lineno})"


def _relative(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return path
