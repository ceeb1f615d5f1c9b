"""What recording statistics adds to the worker's hot path, in instructions.

    python -m bench.statistics_instructions postgresql [--drain 300,1200]

Wall-clock and CPU-time figures on a shared machine swing by more than the
3 % the operations issue allows; instructions counted by valgrind
(``cachegrind``, no cache simulation) do not. Each of four child
processes enqueues the same number of no-op jobs, then claims and
performs ``--drain`` of them as a worker's thread does (claims of 3, each
job finished through ``perform``, statistics flushed when due and at the
end), with statistics recorded or with ``record_attempt`` switched off.
The difference between the small and the large drain of one side cancels
start-up, migrations and the enqueue: what is left is instructions per
job of the drain itself, on and off. Only this process is counted: the
database server's share of the statistics is one upsert per key and
flush, counted separately (``pg_stat_user_tables``) by ``bench.drain``
runs in BENCHMARKS.md.

Needs ``valgrind`` (Debian's package); takes several minutes.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ThreadPoolExecutor
from unittest import mock

from bench.common import instructions_of, throwaway_database


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["sqlite", "postgresql", "mariadb"])
    parser.add_argument("--drain", default="300,1200", help="small,large")
    parser.add_argument("--child", choices=["on", "off"], help=argparse.SUPPRESS)
    options = parser.parse_args()
    small, large = (int(n) for n in options.drain.split(","))
    if options.child:
        _child(options.database, large, small, options.child == "on")
    else:
        _parent(options.database, small, large)


def _child(database: str, enqueue: int, drain: int, record: bool) -> None:
    with throwaway_database(database):
        import robust_queue
        from robust_queue.models import ReadyExecution
        from robust_queue.models.statistics import recorder
        from robust_queue.running.performing import perform
        from testproject import tasks

        robust_queue.enqueue_all([(tasks.add, (i, 1), {}) for i in range(enqueue)])
        off = mock.patch("robust_queue.models.claimed_execution.record_attempt", new=_not_recorded)
        if not record:
            off.start()
        recorder.start_buffering()
        left = drain
        while left and (
            rows := ReadyExecution.objects.claim(min(3, left), process_id=None, worker_id="bench")
        ):
            for row in rows:
                perform(row)
            left -= len(rows)
            recorder.flush_if_due()
        recorder.stop_buffering()
        assert left == 0, f"{left} jobs were not drained"


def _parent(database: str, small: int, large: int) -> None:
    runs = [(side, drain) for side in ("on", "off") for drain in (small, large)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        counts = dict(
            zip(runs, pool.map(lambda run: _count(database, small, large, *run), runs), strict=True)
        )
    per_job = {
        side: (counts[side, large] - counts[side, small]) / (large - small)
        for side in ("on", "off")
    }
    for (side, drain), count in counts.items():
        print(f"{database:10} statistics {side:3} drain {drain:5d}: {count:,} instructions")
    print(
        f"{database:10} drain instructions per job: on {per_job['on']:,.0f}, "
        f"off {per_job['off']:,.0f}; on/off {per_job['on'] / per_job['off']:.4f}"
    )


def _count(database: str, small: int, large: int, side: str, drain: int) -> int:
    args = ["bench.statistics_instructions", database, "--drain", f"{drain},{large}"]
    count, _ = instructions_of([*args, "--child", side], suffix=f"_si{side}{drain}")
    return count


def _not_recorded(*args: object, **kwargs: object) -> None:
    """Statistics off: a plain function (a mock's call costs far more than
    the recording it stands for)."""


if __name__ == "__main__":
    main()
