"""The supervisor's start-up banner: one line per fact (no queries)."""

from __future__ import annotations

from django.db import connections
from django.test import SimpleTestCase

from robust_queue import __version__
from robust_queue.processes.banner import banner
from robust_queue.processes.config import (
    DispatcherConfig,
    SchedulerConfig,
    SupervisorConfig,
    WorkerConfig,
)


class BannerTests(SimpleTestCase):
    def test_the_defaults(self) -> None:
        lines = banner(SupervisorConfig(), scheduler=True)
        connection = connections["default"]
        self.assertEqual(
            lines,
            [
                f"Robust Queue {__version__}: supervisor in fork mode, database 'default' "
                f"({connection.display_name}, {connection.settings_dict['NAME']})",
                "  worker 1: queues *; 1 process(es) x 3 thread(s); polling 0.1s (idle up to 2.0s)",
                "  dispatcher 1: batch 500, polling 1.0s",
                "  scheduler: polling 60.0s",
                "  pidfile: none",
                "  heartbeat every 60.0s, pruned after 300.0s, shutdown timeout 5.0s",
            ],
        )

    def test_each_worker_entry_with_its_recycling_limits(self) -> None:
        config = SupervisorConfig(
            workers=(
                WorkerConfig(queues=("mail*", "default"), processes=2, max_jobs=100),
                WorkerConfig(max_jobs=5, max_memory=512),
                WorkerConfig(max_memory=256.5),
            )
        )
        workers = [line for line in banner(config, scheduler=True) if "worker" in line]
        self.assertEqual(
            workers,
            [
                "  worker 1: queues mail*, default; 2 process(es) x 3 thread(s); polling 0.1s "
                "(idle up to 2.0s); recycled at max_jobs 100",
                "  worker 2: queues *; 1 process(es) x 3 thread(s); polling 0.1s "
                "(idle up to 2.0s); recycled at max_jobs 5, max_memory 512 MiB",
                "  worker 3: queues *; 1 process(es) x 3 thread(s); polling 0.1s "
                "(idle up to 2.0s); recycled at max_memory 256.5 MiB",
            ],
        )

    def test_missing_roles_are_said_out_loud(self) -> None:
        config = SupervisorConfig(workers=(), dispatchers=(), scheduler=None)
        lines = banner(config, scheduler=False)
        self.assertIn("  no workers", lines)
        self.assertIn("  no dispatchers: scheduled and retried jobs wait for one", lines)
        self.assertIn("  scheduler: off", lines)

    def test_a_configured_scheduler_without_recurring_tasks(self) -> None:
        config = SupervisorConfig(
            scheduler=SchedulerConfig(polling_interval=5),
            dispatchers=(DispatcherConfig(batch_size=50, polling_interval=0.5),),
        )
        lines = banner(config, scheduler=False)
        self.assertIn("  scheduler: not started (no recurring tasks)", lines)
        self.assertIn("  dispatcher 1: batch 50, polling 0.5s", lines)
        self.assertEqual(banner(config, scheduler=True)[-3], "  scheduler: polling 5s")

    def test_thread_mode_pidfile_and_timing(self) -> None:
        config = SupervisorConfig(
            mode="thread",
            pidfile="/run/rq.pid",
            heartbeat_interval=30,
            alive_threshold=120,
            shutdown_timeout=25,
        )
        lines = banner(config, scheduler=True)
        self.assertIn("supervisor in thread mode", lines[0])
        self.assertEqual(
            lines[-2:],
            [
                "  pidfile: /run/rq.pid",
                "  heartbeat every 30s, pruned after 120s, shutdown timeout 25s",
            ],
        )
