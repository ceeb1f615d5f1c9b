"""The registry's table of aliases: an old import path -> the task that runs it.

``registry.register`` hands each new declaration here before recording
it; a declaration that would make one path name two tasks is refused
with a ``ConfigurationError`` naming both, in the module that declares
the second (``manage.py check`` and the supervisor's start-up report it
as a task module that cannot be imported, with its file and line):

- an alias that another task declares too;
- an alias that is a declared task's own path (or the task's own);
- a task whose own path another task declares as an alias.

A declaration that replaces an earlier one of the same path (a decorator
stacked over ``@task``, a re-imported module) gives up the aliases of the
earlier one first. A leaf: nothing here reads settings or models.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from ..compat import Task
from ..exceptions import ConfigurationError
from .aliases import ALIASES


class AliasTable:
    """Which declared task each alias names."""

    def __init__(self) -> None:
        self._owner: dict[str, str] = {}
        self._lock = threading.Lock()

    def claim(self, task: Task[..., Any], declared: Mapping[str, Task[..., Any]]) -> None:
        """Record the aliases of ``task`` (a new declaration of its path);
        ``ConfigurationError`` if one of them, or its path, names another
        task already. ``declared``: the registry's path -> task."""
        path = task.module_path
        wanted = tuple(ALIASES.of(task) or ())
        with self._lock:
            problems = self._problems(path, wanted, declared)
            if problems:
                raise ConfigurationError(f"Task {path}: " + " ".join(problems))
            for alias in [alias for alias, owner in self._owner.items() if owner == path]:
                del self._owner[alias]
            for alias in wanted:
                self._owner[alias] = path

    def owner(self, alias: str) -> str | None:
        """The path of the task that declares ``alias``; None: no task."""
        return self._owner.get(alias)

    def items(self) -> list[tuple[str, str]]:
        """(alias, task path) of every alias, by alias."""
        return sorted(self._owner.items())

    def forget(self, path: str) -> None:
        """Drop the aliases of the task at ``path`` (a test's clean-up)."""
        with self._lock:
            for alias in [alias for alias, owner in self._owner.items() if owner == path]:
                del self._owner[alias]

    def _problems(
        self, path: str, wanted: tuple[str, ...], declared: Mapping[str, Task[..., Any]]
    ) -> list[str]:
        problems = []
        holder = self._owner.get(path)
        if holder is not None and holder != path:
            problems.append(
                f"its path is an alias of task {holder} (@aliases({path!r})): a path "
                f"runs one task. Remove the alias from {holder}, or rename this task."
            )
        for alias in wanted:
            other = self._owner.get(alias)
            if alias == path:
                problems.append(f"alias {alias!r} is the task's own path.")
            elif alias in declared:
                problems.append(
                    f"alias {alias!r} is the path of a declared task, which runs its jobs. "
                    "Remove the alias, or remove the old task (once its jobs have run)."
                )
            elif other is not None and other != path:
                problems.append(
                    f"alias {alias!r} is an alias of task {other} too: an old path runs "
                    "one task. Keep it in one @aliases()."
                )
        return problems
