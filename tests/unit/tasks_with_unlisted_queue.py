"""A task module whose task uses a queue that TASKS may not list (checks tests)."""

from __future__ import annotations

from robust_queue.compat import task


@task(queue_name="reports")
def report() -> None:
    """Imported only under settings that do not allow its queue."""
