"""Whether a worker imports a task's module at start-up (issue 28 §7).

A worker finds tasks by importing modules: Django's set-up imports each
installed app's package, its ``models`` and, with the admin, its ``admin``
module (and ``AppConfig.ready()`` whatever it imports); then
``registry.autodiscover`` imports each app's ``tasks`` module and
``ROBUST_QUEUE["task_modules"]``. A task declared in a module that none of
these imports, directly or through the modules they import (a
``views.py``, a ``jobs.py`` that only views import), enqueues fine in a
web process and fails in the worker with ``UnknownTaskError``.

``reaches(module)`` answers from the import statements of those modules,
read from their source (``ast``, nothing is imported) and followed within
the project's own modules (the installed apps and ``task_modules``). An
import built at run time (``import_module(name)``) is not seen: the answer
may be a false "no", so it is only ever a warning. The graph is read
once per process and setting, on the first enqueue of a task whose module
is not a task module itself.
"""

from __future__ import annotations

import ast
import logging
import sys
from collections.abc import Iterator
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path

from django.apps import apps

from .. import conf

logger = logging.getLogger(__name__)

_OURS = str(Path(__file__).resolve().parents[1])

# Task modules already judged in this process: each warns at most once.
_JUDGED: set[str] = set()


def warn_if_unimported(module: str) -> None:
    """Log a warning, once per module and process, if workers do not import
    ``module`` at start-up, naming the setting that makes them."""
    if module in _JUDGED:
        return
    _JUDGED.add(module)
    if reaches(module):
        return
    logger.warning(
        "Task module %r is not imported by workers at start-up (they import each "
        "installed app's tasks module and ROBUST_QUEUE['task_modules'], and what "
        "those import): its jobs will fail with UnknownTaskError. Add %r to "
        "ROBUST_QUEUE['task_modules'], or import it from the app's tasks module.",
        module,
        module,
    )


def reaches(module: str) -> bool:
    """Whether a worker's start-up imports ``module``, as far as the import
    statements of the modules it starts from tell."""
    roots = tuple(_start_modules())
    return module in roots or module in _imported_from(roots, _project_roots())


def _start_modules() -> Iterator[str]:
    admin = apps.is_installed("django.contrib.admin")
    for config in apps.get_app_configs():
        yield config.name
        yield type(config).__module__
        for name in ("models", "tasks", *(("admin",) if admin else ())):
            yield f"{config.name}.{name}"
    yield from conf.get(conf.TASK_MODULES)


def _project_roots() -> tuple[str, ...]:
    """The project's own apps (not installed packages: Django's, this
    one's) and ``task_modules``: the code whose imports are followed."""
    names = [config.name for config in apps.get_app_configs() if _is_own(config.path)]
    return tuple(sorted({*names, *conf.get(conf.TASK_MODULES)}))


def _is_own(path: str) -> bool:
    parts = Path(path).parts
    return "site-packages" not in parts and "dist-packages" not in parts and path != _OURS


@lru_cache(maxsize=4)
def _imported_from(roots: tuple[str, ...], project: tuple[str, ...]) -> frozenset[str]:
    """Every project module that importing ``roots`` imports."""
    seen: set[str] = set()
    pending = [name for name in roots if _is_project(name, project)]
    while pending:
        name = pending.pop()
        if name in seen or _source(name) is None:
            continue
        seen.add(name)
        # Importing a.b.c runs a/__init__ and a/b/__init__ first.
        parts = name.split(".")
        pending += [".".join(parts[:i]) for i in range(1, len(parts))]
        pending += [n for n in _imports_of(name) if _is_project(n, project) and n not in seen]
    return frozenset(seen)


def _is_project(name: str, project: tuple[str, ...]) -> bool:
    return any(name == root or name.startswith(root + ".") for root in project)


@lru_cache(maxsize=1024)
def _source(name: str) -> Path | None:
    """The ``.py`` file of module ``name``, found without importing it
    (``find_spec`` of a dotted name would import its parents)."""
    module = sys.modules.get(name)
    if module is not None:
        file = getattr(module, "__file__", None)
        return Path(file) if isinstance(file, str) and file.endswith(".py") else None
    top, _, rest = name.partition(".")
    try:
        spec = find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if not rest:
        origin = spec.origin
        return Path(origin) if origin and origin.endswith(".py") else None
    return _in_directories([Path(d) for d in spec.submodule_search_locations or ()], rest)


def _in_directories(directories: list[Path], dotted: str) -> Path | None:
    part, _, rest = dotted.partition(".")
    for directory in directories:
        package = directory / part
        if not rest:
            for candidate in (package / "__init__.py", directory / f"{part}.py"):
                if candidate.is_file():
                    return candidate
        elif package.is_dir():
            return _in_directories([package], rest)
    return None


def _imports_of(name: str) -> list[str]:
    """The module names ``name``'s import statements (anywhere in it) name;
    ``from a import b`` names both ``a`` and ``a.b`` (b may be a module)."""
    path = _source(name)
    assert path is not None
    try:
        tree = ast.parse(path.read_bytes(), str(path))
    except (OSError, SyntaxError, ValueError):
        return []
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            if base:
                found.append(base)
                found += [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
    return found


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    if node.level - 1 >= len(parts):
        return ""
    base = ".".join(parts[: len(parts) - (node.level - 1)])
    return f"{base}.{node.module}" if node.module else base
