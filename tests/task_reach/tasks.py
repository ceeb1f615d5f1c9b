"""What a task module imports, at its top or inside a function, a worker imports too."""

from __future__ import annotations

from . import helpers


def later() -> object:
    from tests.task_reach.deferred import VALUE

    return VALUE, helpers
