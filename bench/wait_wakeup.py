"""How soon ``robust_queue.wait_result`` returns after the job finished.

    python -m bench.wait_wakeup {postgresql,mariadb,sqlite} [--samples 50]

Starts `manage.py robust_queue` (one worker, 3 threads) on a throw-away
database. Each sample enqueues a job that runs until a file exists, waits
until it runs, then calls ``wait_result`` while a thread creates the file
after a random 0.05-1.5 s (so the finish falls at every point of the
waiter's back-off). The wake-up is the time ``wait_result`` returned minus
the job's ``finished_at`` (both this host's clock: the worker runs here),
so it holds the finish's commit, the signal (PostgreSQL's NOTIFY, SQLite's
data version, MariaDB's back-off) and the refresh of the result. Prints
p50, p99 and the largest, in milliseconds.
"""

from __future__ import annotations

import argparse
import random
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from bench.common import setup_django, start_supervisor, teardown_django


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["postgresql", "mariadb", "sqlite"])
    parser.add_argument("--samples", type=int, default=50)
    options = parser.parse_args()
    setup_django(options.database)
    supervisor = _start()
    try:
        folder = Path(tempfile.mkdtemp())
        wakeups = [_sample(folder / f"gate-{n}") for n in range(options.samples)]
    finally:
        supervisor.send_signal(signal.SIGTERM)
        supervisor.wait(timeout=30)
        teardown_django()
    cuts = statistics.quantiles(wakeups, n=100, method="inclusive")
    print(
        f"{options.database:10} wait_result wake-up after the finish, {len(wakeups)} samples: "
        f"p50 {cuts[49]:.1f} ms, p99 {cuts[98]:.1f} ms, max {max(wakeups):.1f} ms"
    )


def _sample(gate: Path) -> float:
    import robust_queue
    from robust_queue.models import Job
    from testproject import progress_tasks

    result = progress_tasks.until_exists.enqueue(str(gate))
    running = Job.objects.filter(result_id=result.id, claimed_execution__isnull=False)
    deadline = time.monotonic() + 120
    while not running.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the job did not start within 120 s")
        time.sleep(0.01)
    timer = threading.Timer(random.uniform(0.05, 1.5), gate.touch)
    timer.start()
    robust_queue.wait_result(result, timeout=30)
    returned = time.time()
    timer.join()
    return (returned - result.finished_at.timestamp()) * 1000


def _start() -> subprocess.Popen[bytes]:
    config = {
        "workers": [{"queues": ["*"], "threads": 3, "polling_interval": 0.05}],
        "dispatchers": [],
        "scheduler": False,
        "task_modules": ["testproject.progress_tasks"],
    }
    return start_supervisor(config)


if __name__ == "__main__":
    main()
