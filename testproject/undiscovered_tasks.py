"""A Robust Queue task in an installed app that nothing imports at start-up.

No test imports this module: a job row naming one of its tasks must fail
without importing it.
"""

from __future__ import annotations

from robust_queue.compat import task


@task()
def hidden() -> str:
    return "ran"
