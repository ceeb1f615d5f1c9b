"""Workers of a real supervisor keep statistics in memory and write them
every flush interval and when they stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from django.conf import settings
from django.db.models import Sum
from django.test import TransactionTestCase

import robust_queue
from robust_queue.models import Job, Statistic
from testproject import tasks
from tests.helpers import wait_until

from .support import ROOT, Supervisor


def counted(column: str) -> int:
    return int(Statistic.objects.minutes().aggregate(n=Sum(column))["n"] or 0)


def all_done() -> bool:
    return not Job.objects.filter(finished_at__isnull=True, failed_execution__isnull=True).exists()


class WorkerStatisticsTests(TransactionTestCase):
    def test_a_stopping_worker_writes_what_it_kept(self) -> None:
        """No flush is due for an hour: only the shutdown flush writes."""
        robust_queue.enqueue_all(
            [(tasks.add, (i, i), {}) for i in range(20)] + [(tasks.fail, ("x",), {})] * 3
        )
        supervisor = Supervisor(self, statistics_flush_interval=3600)
        wait_until(all_done, timeout=60)
        self.assertFalse(Statistic.objects.exists(), "nothing is written before the flush")
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=15), 0, supervisor.output())
        self.assertEqual((counted("finished"), counted("failed")), (20, 3))
        self.assertEqual(Statistic.objects.totals().aggregate(n=Sum("finished"))["n"], 20)

    def test_thread_mode_workers_share_one_tally_and_write_it_at_shutdown(self) -> None:
        robust_queue.enqueue_all([(tasks.add, (i, i), {}) for i in range(12)])
        supervisor = Supervisor(
            self,
            "--mode",
            "thread",
            statistics_flush_interval=3600,
            workers=[{"queues": ["*"], "threads": 2, "processes": 2, "polling_interval": 0.05}],
        )
        wait_until(all_done, timeout=60)
        self.assertFalse(Statistic.objects.exists())
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=15), 0, supervisor.output())
        self.assertEqual(counted("finished"), 12)

    def test_a_running_worker_flushes_every_interval(self) -> None:
        robust_queue.enqueue_all([(tasks.add, (i, i), {}) for i in range(10)])
        supervisor = Supervisor(self, statistics_flush_interval=0.2)
        wait_until(lambda: counted("finished") == 10, timeout=60)
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=15), 0, supervisor.output())
        self.assertEqual(counted("finished"), 10)


class MetricsCommandTests(TransactionTestCase):
    def test_manage_py_robust_queue_metrics_prints_the_text_format(self) -> None:
        tasks.report.enqueue(1)
        env = {**os.environ, "ROBUST_QUEUE_DB_NAME": settings.DATABASES["default"]["NAME"]}
        done = subprocess.run(
            [sys.executable, "manage.py", "robust_queue", "metrics"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("# TYPE robust_queue_jobs gauge\n", done.stdout)
        self.assertIn('robust_queue_jobs{queue="reports",state="ready"} 1\n', done.stdout)
