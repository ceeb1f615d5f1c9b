"""The worker's own CPU per no-op job, in-process: claim 3, perform each.

    python -m bench.worker_cpu postgresql [--jobs 2000]

No supervisor, no threads: this isolates the Python cost of the hot path
(claim, perform, finalize), and reports the database server's CPU beside it
(zero for SQLite, which runs in-process). ``--batch`` sets the claim size.
"""

from __future__ import annotations

import argparse

from bench.common import per_job_cost, throwaway_database


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["sqlite", "postgresql", "mariadb"])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=3)
    options = parser.parse_args()
    with throwaway_database(options.database):
        _run(options.database, options.jobs, options.batch)


def _run(database: str, jobs: int, batch: int) -> None:
    import robust_queue
    from robust_queue.models import ReadyExecution
    from robust_queue.running.performing import perform
    from testproject import tasks

    robust_queue.enqueue_all([(tasks.add, (i, 1), {}) for i in range(jobs)])

    try:
        # Statistics, kept in memory and flushed as a worker does (a tree
        # without them measures the same loop without).
        from robust_queue.models.statistics import recorder
    except ImportError:
        recorder = None

    def work_off() -> int:
        done = 0
        if recorder is not None:
            recorder.start_buffering()
        while rows := ReadyExecution.objects.claim(batch, process_id=None, worker_id="bench"):
            for row in rows:
                perform(row)
                done += 1
            if recorder is not None:
                recorder.flush_if_due()
        if recorder is not None:
            recorder.stop_buffering()
        return done

    print(f"{database:10} worker loop, claims of {batch}: {per_job_cost(work_off)}")


if __name__ == "__main__":
    main()
