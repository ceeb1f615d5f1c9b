"""Running the ``<!-- runnable -->`` Python blocks of a page as one module.

The blocks of a page run in order, as one module inside the test project
(an installed app, so they may declare tasks). A block that assigns
``ROBUST_QUEUE`` is a settings example: the value must pass the system
checks. Whatever the blocks register process-wide (tasks, recurring
tasks, enqueue hooks, signal receivers) is dropped after the test.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import types
from pathlib import Path

from django.dispatch import Signal
from django.test import TestCase, override_settings

from robust_queue import signals
from robust_queue.checks import check_settings
from robust_queue.compat import task_enqueued, task_finished, task_started
from robust_queue.options import recurrence, registry
from robust_queue.running import enqueue_metadata

ROOT = Path(__file__).resolve().parents[1]
RUNNABLE = re.compile(r"<!-- runnable -->\s*\n```python\n(.*?)```", re.DOTALL)


class SnippetTestCase(TestCase):
    def run_page(self, relative: str) -> types.ModuleType:
        blocks = RUNNABLE.findall((ROOT / relative).read_text())
        self.assertTrue(blocks, f"{relative} has no runnable python block")
        name = "testproject._docs_" + re.sub(r"\W", "_", relative)
        module = types.ModuleType(name)
        sys.modules[name] = module
        self.addCleanup(_forget, module)
        with contextlib.redirect_stdout(io.StringIO()):
            for number, block in enumerate(blocks, 1):
                settings = module.__dict__.get("ROBUST_QUEUE")
                where = f"{relative} (runnable block {number})"
                exec(compile(block, where, "exec"), module.__dict__)
                if module.__dict__.get("ROBUST_QUEUE") is not settings:
                    self.assert_valid_settings(module.ROBUST_QUEUE, where)
        return module

    def assert_valid_settings(self, value: object, where: str) -> None:
        with override_settings(ROBUST_QUEUE=value):
            problems = [m for m in check_settings() if m.is_serious()]
        self.assertEqual(problems, [], f"{where}: ROBUST_QUEUE does not pass the checks")


def _forget(module: types.ModuleType) -> None:
    name = module.__name__
    sys.modules.pop(name, None)
    prefix = name + "."
    for path in [p for p in registry._DECLARED if p.startswith(prefix)]:
        del registry._DECLARED[path]
    for key in [k for k, d in recurrence._DECLARED.items() if d.task_path.startswith(prefix)]:
        del recurrence._DECLARED[key]
    enqueue_metadata._HOOKS[:] = [
        h for h in enqueue_metadata._HOOKS if getattr(h, "__module__", None) != name
    ]
    receivers = [v for v in vars(module).values() if getattr(v, "__module__", None) == name]
    every = [v for v in vars(signals).values() if isinstance(v, Signal)]
    for signal in (*every, task_enqueued, task_started, task_finished):
        for receiver in receivers:
            signal.disconnect(receiver)
