"""The package's modules import each other without a circle, counting the
imports made inside functions (which only hide a circle until the
function runs) and the ``if TYPE_CHECKING:`` ones (two modules that name
each other's types still cannot be read, moved or tested apart)."""

from __future__ import annotations

import ast
from pathlib import Path

from django.test import SimpleTestCase

import robust_queue

PACKAGE = Path(robust_queue.__file__).resolve().parent
ROOT = PACKAGE.parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _targets(
    node: ast.Import | ast.ImportFrom, name: str, is_package: bool, modules: set[str]
) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if node.level:
        base = name.split(".") if is_package else name.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        module = ".".join([*base, node.module] if node.module else base)
    else:
        module = node.module or ""
    # ``from m import x`` imports submodule m.x where there is one, else m.
    return {
        f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module
        for alias in node.names
    }


def import_graph(
    sources: dict[str, tuple[str, bool]], *, type_hints: bool = True
) -> dict[str, set[str]]:
    """Module -> the package modules it imports (``sources``: name ->
    (source, is_package)); ``type_hints=False`` leaves ``if TYPE_CHECKING:``
    imports out. A module's own package is an arrow only where the module
    imports a name from it (``from . import Job``): the package's
    ``__init__`` defines that name by importing its modules, maybe this one."""
    modules = set(sources)
    graph: dict[str, set[str]] = {}
    for name, (source, is_package) in sources.items():
        tree = ast.parse(source)
        skipped = set() if type_hints else _type_checking_lines(tree)
        imported: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno not in skipped:
                imported |= _targets(node, name, is_package, modules) & modules
        graph[name] = imported - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def package_sources() -> dict[str, tuple[str, bool]]:
    return {
        module_name(path): (path.read_text(), path.name == "__init__.py")
        for path in PACKAGE.rglob("*.py")
        if "migrations" not in path.parts
    }


class ImportGraphTests(SimpleTestCase):
    def test_the_graph_finds_each_kind_of_import(self) -> None:
        """The reader itself works: top-level, relative, function-local,
        ``from . import`` and TYPE_CHECKING imports are arrows, the last
        left out on request; a name imported from the module's own package
        is an arrow to the package."""
        sources = {
            "p": ("", True),
            "p.a": ("from .b import x\n", False),
            "p.b": ("def f():\n    from . import c\n", False),
            "p.c": ("import p.a\n", False),
            "p.d": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import y\n",
                False,
            ),
            "p.sub": ("from ..d import z\nfrom .e import Name\n", True),
            "p.sub.e": ("from . import Name\n", False),
        }
        graph = import_graph(sources)
        self.assertEqual(graph["p.a"], {"p.b"})
        self.assertEqual(graph["p.b"], {"p.c"})
        self.assertEqual(graph["p.c"], {"p.a"})
        self.assertEqual(graph["p.d"], {"p.a"})
        self.assertEqual(graph["p.sub"], {"p.d", "p.sub.e"})
        self.assertEqual(graph["p.sub.e"], {"p.sub"})
        self.assertEqual(import_graph(sources, type_hints=False)["p.d"], set())
        self.assertEqual(circles(graph), [["p.a", "p.b", "p.c"], ["p.sub", "p.sub.e"]])

    def test_the_package_has_no_circle(self) -> None:
        """Type hints included: a circle through ``if TYPE_CHECKING:``
        imports opens with a protocol of what one side reads (e.g.
        ``models/job_row.py``)."""
        sources = package_sources()
        graph = import_graph(sources)
        self.assertGreater(sum(len(edges) for edges in graph.values()), 300)
        self.assertEqual(circles(graph), [])

    def test_the_admin_has_no_circle(self) -> None:
        """Type hints included: the jobs admin's views take a
        ``JobsContext`` (``admin/jobs_context.py``) built by ``JobAdmin``, so
        none of them imports ``admin/jobs.py``, not even to name its type."""
        graph = import_graph(package_sources())
        admin = {
            name: {target for target in edges if _in_admin(target)}
            for name, edges in graph.items()
            if _in_admin(name)
        }
        self.assertGreater(sum(len(edges) for edges in admin.values()), 80)
        self.assertEqual(circles(admin), [])

    def test_the_core_never_imports_the_admin(self) -> None:
        """Only ``robust_queue.admin`` imports ``robust_queue.admin``, not even
        for type checking: a project without ``django.contrib.admin`` runs
        every command (``tests/processes/test_no_admin.py``)."""
        sources = package_sources()
        importers = set()
        for name, (source, is_package) in sources.items():
            if _in_admin(name):
                continue
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    if any(map(_in_admin, _targets(node, name, is_package, set(sources)))):
                        importers.add(name)
        self.assertEqual(sorted(importers), [])


def _in_admin(module: str) -> bool:
    return module == "robust_queue.admin" or module.startswith("robust_queue.admin.")


# The package's rooms, lowest first: a module imports only from its own
# room or the rooms below it (type-checking imports included). Top-level
# modules not named here are the package's face (``__init__``, ``apps``).
ROOMS = (
    (
        "foundation",
        (
            "compat",
            "exceptions",
            "signals",
            "conversions",
            "conf",
            "arguments",
            "router",
            "backoff",
            "masking",
        ),
    ),
    ("options", ("options",)),
    ("models", ("models",)),
    ("running", ("running",)),
    ("backend", ("backend",)),
    ("enqueueing", ("enqueueing",)),
    ("processes", ("processes",)),
    ("checks", ("checks",)),
    ("operations", ("operations",)),
    ("metrics", ("metrics", "urls")),
    ("management", ("management",)),
    ("admin", ("admin",)),
    ("face", ("apps", "")),
)


def room_of(module: str) -> int:
    first = module.removeprefix("robust_queue").lstrip(".").split(".")[0]
    for floor, (_, members) in enumerate(ROOMS):
        if first in members:
            return floor
    raise AssertionError(f"{module} is in no room: add it to ROOMS")


class RoomTests(SimpleTestCase):
    def test_every_module_is_in_a_room(self) -> None:
        for name in package_sources():
            with self.subTest(module=name):
                room_of(name)

    def test_no_room_imports_a_room_above_it(self) -> None:
        """Type-checking imports too: the tree tells where a change goes."""
        climbing = [
            f"{name} -> {target}"
            for name, imported in import_graph(package_sources()).items()
            for target in imported
            if target != "robust_queue" and room_of(target) > room_of(name)
        ]
        self.assertEqual(sorted(climbing), [])

    def test_the_top_level_holds_few_modules(self) -> None:
        top = [p.name for p in PACKAGE.glob("*.py")]
        self.assertLessEqual(len(top), 14, sorted(top))
