"""Where a single ``enqueue()`` spends its time: cProfile of N calls.

    python -m bench.enqueue_profile postgresql [--jobs 10000] [--top 25]

Enqueues ``--jobs`` no-op tasks one ``enqueue()`` at a time in autocommit
mode under cProfile, after a warm-up, and prints the functions with the
most own time, each as microseconds per enqueue and share of the total,
with the total per enqueue (cProfile's own overhead included, so compare
shares, and totals only between runs of this command).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats

from bench.common import throwaway_database


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["sqlite", "postgresql", "mariadb"])
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--top", type=int, default=25)
    options = parser.parse_args()
    with throwaway_database(options.database):
        _run(options.database, options.jobs, options.top)


def _run(database: str, jobs: int, top: int) -> None:
    from testproject import tasks

    for i in range(200):
        tasks.add.enqueue(i, 1)
    profile = cProfile.Profile()
    profile.enable()
    for i in range(jobs):
        tasks.add.enqueue(i, 1)
    profile.disable()
    stats = pstats.Stats(profile)
    rows = stats.stats  # type: ignore[attr-defined]
    total = sum(own for (_, _, own, _, _) in rows.values())
    print(f"{database}: {total / jobs * 1e6:.0f} µs per enqueue under cProfile ({jobs} calls)")
    ranked = sorted(rows.items(), key=lambda item: item[1][2], reverse=True)[:top]
    for (path, line, name), (_, calls, own, cumulative, _) in ranked:
        where = f"{_short(path)}:{line}({name})"
        print(
            f"  {own / jobs * 1e6:7.1f} µs {own / total:6.1%} own, "
            f"{cumulative / jobs * 1e6:7.1f} µs with callees, "
            f"{calls / jobs:5.1f} calls/enqueue  {where}"
        )


def _short(path: str) -> str:
    for marker in ("site-packages/", "robust_queue/", "lib/python"):
        if marker in path:
            return path[path.index(marker) :]
    return path


if __name__ == "__main__":
    main()
