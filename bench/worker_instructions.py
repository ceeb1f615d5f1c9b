"""Instructions per job of a worker thread's loop, counted by valgrind.

    python -m bench.worker_instructions postgresql [--drain 100,500] [--no-resume]

What a drain's threads run, in one thread of this process: claim one job,
``perform`` it, and as it finishes claim the next in the same statement
(finish-and-claim-next), until ``--drain`` jobs have run; each claim
resumed after the last one, as a worker's is (``--no-resume``: from the
head of the ready index). Two children
run under valgrind (``cachegrind``, no cache simulation), one per drain
size; the difference cancels start-up, migrations and the enqueue, so
what is left is instructions per job of the loop itself. Each child also
prints the statements it sent per job. Only this process is counted, not
the database server.

Wall-clock drains on a shared 2-core machine swing by more than the
changes they are asked to judge; run this in two worktrees to compare two
commits exactly. Needs ``valgrind`` (Debian's package).
"""

from __future__ import annotations

import argparse
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.common import instructions_of, throwaway_database


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["sqlite", "postgresql", "mariadb"])
    parser.add_argument("--drain", default="100,500", help="small,large")
    parser.add_argument(
        "--no-resume",
        dest="resume",
        action="store_false",
        help="claim from the head of the ready index, not after the last claim as workers do",
    )
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    small, large = (int(n) for n in options.drain.split(","))
    if options.child:
        _child(options.database, enqueue=large, drain=options.child, resume=options.resume)
    else:
        _parent(options.database, small, large, options.resume)


def _child(database: str, enqueue: int, drain: int, resume: bool) -> None:
    with throwaway_database(database):
        from django.db import connection

        import robust_queue
        from robust_queue.models import NextClaim, ReadyExecution
        from robust_queue.running.performing import perform
        from testproject import tasks
        from tests.helpers import make_process

        process = make_process()
        robust_queue.enqueue_all([(tasks.add, (i, 1), {}) for i in range(enqueue + 1)])
        statements: Counter[str] = Counter()

        def counted(execute: Any, sql: str, *args: Any) -> Any:
            statements[sql.split(None, 1)[0].upper()] += 1
            return execute(sql, *args)

        nexts: list[NextClaim] = []

        def then() -> NextClaim:
            nexts.append(NextClaim(None, (), None, process.pk, "bench", resume=resume))
            return nexts[-1]

        [row] = ReadyExecution.objects.claim(
            1, process_id=process.pk, worker_id="bench", resume=resume
        )
        with connection.execute_wrapper(counted):
            for _ in range(drain):
                nexts.clear()
                perform(row, then=then)
                [row] = nexts[0].claimed
        print(f"statements per job: {sum(statements.values()) / drain:.2f} {dict(statements)}")


def _parent(database: str, small: int, large: int, resume: bool) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        (low, low_out), (high, high_out) = pool.map(
            lambda drain: _count(database, large, drain, resume), (small, large)
        )
    print(f"{database:10} drain {small:5d}: {low:,} instructions; {low_out}")
    print(f"{database:10} drain {large:5d}: {high:,} instructions; {high_out}")
    print(f"{database:10} instructions per job: {(high - low) / (large - small):,.0f}")


def _count(database: str, large: int, drain: int, resume: bool) -> tuple[int, str]:
    args = ["bench.worker_instructions", database, "--drain", f"{drain},{large}"]
    args += [] if resume else ["--no-resume"]
    count, printed = instructions_of([*args, "--child", str(drain)], suffix=f"_wi{drain}")
    return count, printed.strip().splitlines()[-1]


if __name__ == "__main__":
    main()
