"""Instructions per single ``enqueue()``, counted by valgrind, ours and
optionally django-tasks-db's.

    python -m bench.enqueue_instructions sqlite [--calls 200,1000] [--peer]

Two children run under valgrind (``cachegrind``, no cache simulation),
each enqueuing a no-op task one ``enqueue()`` at a time in autocommit mode,
``--calls`` small and large times; the difference cancels start-up and
migrations, so what is left is instructions per enqueue in this process:
the Python of the enqueue path and the driver, and on SQLite the database
engine too (it runs in-process). The server of PostgreSQL or MariaDB is
not counted. With ``--peer`` (in a venv with django-tasks-db 0.13, see
``bench.peer_settings``) the same is counted for the peer's task, and the
ratio printed.

Wall clock on a shared 2-core machine swings by more than an enqueue-path
change; this count repeats exactly. Run it in two worktrees to compare two
commits. Needs ``valgrind`` (Debian's package).
"""

from __future__ import annotations

import argparse
import os
from concurrent.futures import ThreadPoolExecutor

from bench.common import instructions_of, throwaway_database


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["sqlite", "postgresql", "mariadb"])
    parser.add_argument("--calls", default="200,1000", help="small,large")
    parser.add_argument("--peer", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    small, large = (int(n) for n in options.calls.split(","))
    if options.child:
        side, calls = options.child.split(":")
        _child(options.database, side, int(calls))
        return
    sides = ["ours", "peer"] if options.peer else ["ours"]
    if options.peer:
        # Both sides in the peer's settings, ours on a task of its own there.
        os.environ["DJANGO_SETTINGS_MODULE"] = "bench.peer_settings"
    per_call = {side: _per_call(options.database, side, small, large) for side in sides}
    for side, count in per_call.items():
        print(f"{options.database:10} {side}: {count:,.0f} instructions per enqueue()")
    if options.peer:
        print(f"{options.database:10} peer / ours: {per_call['peer'] / per_call['ours']:.2f}")


def _child(database: str, side: str, calls: int) -> None:
    with throwaway_database(database):
        from django.conf import settings

        from testproject import tasks

        task = tasks.add
        if settings.SETTINGS_MODULE == "bench.peer_settings":
            from bench import peer_tasks

            task = peer_tasks.peer if side == "peer" else peer_tasks.ours
        task.enqueue(0, 1)  # the first call's imports and caches, in both children
        for i in range(calls):
            task.enqueue(i, 1)


def _per_call(database: str, side: str, small: int, large: int) -> float:
    def count(calls: int) -> int:
        args = ["bench.enqueue_instructions", database, "--child", f"{side}:{calls}"]
        instructions, _ = instructions_of(args, suffix=f"_ei{side}{calls}")
        return instructions

    with ThreadPoolExecutor(max_workers=2) as pool:
        low, high = pool.map(count, (small, large))
    return (high - low) / (large - small)


if __name__ == "__main__":
    main()
