"""No example enqueues at import (issue 28 §5).

A block that declares a task is what a reader pastes into ``tasks.py``,
which every process imports: ``manage.py check``, ``migrate``, each worker
at start-up. An ``enqueue`` at the top level of such a block would add a
job each time. So a block that declares a task enqueues nothing at its top
level; enqueueing is shown in a function (a view, a command) or in a block
of its own, introduced as run from a view or ``manage.py shell``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from django.test import SimpleTestCase

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "PACKAGE.md", *sorted((ROOT / "docs").rglob("*.md"))]
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
ENQUEUEING = {
    "enqueue",
    "aenqueue",
    "enqueue_all",
    "enqueue_once",
    "enqueue_after",
    "chain",
    "batch",
}


def top_level_enqueues(tree: ast.Module) -> list[int]:
    """Lines of the module's own statements (not inside a function or a
    class) that call an enqueueing verb."""
    lines = []
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and _name(node.func) in ENQUEUEING:
                lines.append(node.lineno)
    return lines


def declares_a_task(tree: ast.Module) -> bool:
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and any("task" in ast.unparse(d) for d in node.decorator_list)
        for node in tree.body
    )


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


class ExamplesEnqueueNothingAtImportTests(SimpleTestCase):
    def test_no_block_that_declares_a_task_enqueues_at_its_top_level(self) -> None:
        offenders = []
        for page in PAGES:
            for block in PYTHON_BLOCK.findall(page.read_text()):
                try:
                    tree = ast.parse(block)
                except SyntaxError:
                    continue  # a fragment or a shell session, not a module
                if declares_a_task(tree):
                    offenders += [
                        f"{page.relative_to(ROOT)}: {block.splitlines()[line - 1].strip()}"
                        for line in top_level_enqueues(tree)
                    ]
        self.maxDiff = None
        self.assertEqual(offenders, [])

    def test_the_rule_catches_an_enqueue_at_import(self) -> None:
        """The check itself: the README's old example is caught; the same
        call inside a view is not."""
        declared = "@task()\ndef report(rows):\n    return rows\n\n\n"
        self.assertEqual(
            top_level_enqueues(ast.parse(declared + "result = report.enqueue(3)\n")), [6]
        )
        in_view = declared + "def start(request):\n    return report.enqueue(3)\n"
        self.assertEqual(top_level_enqueues(ast.parse(in_view)), [])
        self.assertIs(declares_a_task(ast.parse(declared)), True)
