"""The command's options, pidfile, pausing, hooks and PostgreSQL wake-ups."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path
from unittest import skipUnless

from django.db import connection
from django.test import TransactionTestCase

from robust_queue.models import Job, Queue
from testproject import tasks
from tests.helpers import wait_until

from .support import ROOT, Supervisor

HOOKS = {
    kind: {
        "on_start": ["testproject.hooks.started"],
        "on_stop": ["testproject.hooks.stopped"],
        "on_exit": ["testproject.hooks.exited"],
    }
    for kind in ("supervisor", "worker")
}


def finished(result_id: str) -> bool:
    return Job.objects.filter(result_id=result_id, finished_at__isnull=False).exists()


def run_check(config_json: str, database: str | None = None) -> subprocess.CompletedProcess[str]:
    # MySQL's system checks connect, so point at the real test database
    # (or at ``database``).
    from django.conf import settings

    env = dict(
        os.environ,
        ROBUST_QUEUE_CONFIG_JSON=config_json,
        ROBUST_QUEUE_DB_NAME=database or settings.DATABASES["default"]["NAME"],
    )
    return subprocess.run(
        [sys.executable, "manage.py", "robust_queue", "--check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


class CheckTests(TransactionTestCase):
    def test_check_passes_a_valid_configuration(self) -> None:
        done = run_check("{}")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("configuration is valid", done.stdout)

    def test_check_names_every_problem_and_exits_non_zero(self) -> None:
        done = run_check('{"workers": [{"threads": 0}], "hooks": {"worker": {"on_boot": []}}}')
        self.assertEqual(done.returncode, 1)
        self.assertIn("WorkerConfig.threads must be > 0, not 0", done.stderr)
        self.assertIn("unknown event 'on_boot'", done.stderr)

    def test_check_names_a_database_that_cannot_be_reached(self) -> None:
        # The checks run in a throwaway child: its error comes back as
        # E024, not a traceback, whichever check connects first (Django
        # 6.1's own, or the migration check).
        missing = (
            "/nonexistent/dir/rq.sqlite3" if connection.vendor == "sqlite" else "rq_no_such_db"
        )
        done = run_check("{}", database=missing)
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertIn("(robust_queue.E024)", done.stderr)
        self.assertIn("cannot be reached", done.stderr)
        self.assertNotIn("Traceback", done.stderr)

    def test_check_reports_malformed_settings(self) -> None:
        done = run_check('{"workers": [{"colour": "red"}]}')
        self.assertEqual(done.returncode, 1)
        self.assertIn("Invalid ROBUST_QUEUE settings", done.stderr)


class CommandTests(TransactionTestCase):
    def test_pidfile_refuses_a_second_supervisor_while_the_first_lives(self) -> None:
        pidfile = Path(tempfile.mkdtemp()) / "rq.pid"
        first = Supervisor(self, supervisor_pidfile=str(pidfile))
        wait_until(lambda: pidfile.exists() and pidfile.read_text().strip() == str(first.pid))
        second = Supervisor(self, supervisor_pidfile=str(pidfile))
        self.assertNotEqual(second.wait(timeout=30), 0)
        self.assertIn(f"already running with pid {first.pid}", second.output())
        first.send(signal.SIGTERM)
        self.assertEqual(first.wait(timeout=15), 0)
        self.assertFalse(pidfile.exists(), "the pidfile is removed at exit")

    def test_two_supervisors_started_together_one_runs(self) -> None:
        """The lock, not a check-then-write, decides: the loser exits
        non-zero naming the pidfile and the winner's pid."""
        pidfile = Path(tempfile.mkdtemp()) / "rq.pid"
        racers = [Supervisor(self, supervisor_pidfile=str(pidfile)) for _ in range(2)]
        loser = wait_until(
            lambda: next((r for r in racers if r.popen.poll() is not None), None), timeout=60
        )
        assert isinstance(loser, Supervisor)
        winner = racers[1 - racers.index(loser)]
        self.assertNotEqual(loser.popen.returncode, 0)
        self.assertIn(
            f"A supervisor is already running with pid {winner.pid}: "
            f"it holds the lock on {pidfile}.",
            loser.output(),
        )
        self.assertNotIn("Traceback", loser.output())
        winner.children("worker")
        self.assertIsNone(winner.popen.poll())
        self.assertEqual(pidfile.read_text().strip(), str(winner.pid))

    def test_a_stale_pidfile_is_replaced(self) -> None:
        pidfile = Path(tempfile.mkdtemp()) / "rq.pid"
        pidfile.write_text("999999\n")
        supervisor = Supervisor(self, supervisor_pidfile=str(pidfile))
        wait_until(lambda: pidfile.read_text().strip() == str(supervisor.pid))

    def test_pausing_stops_claiming_but_not_enqueueing(self) -> None:
        """The held job comes first in claim order (same priority, lower
        id): a worker that ignored the pause would claim it in the same poll
        as any job of another queue. Each job of ``other`` that finishes
        proves a poll that skipped it; the second is enqueued after the
        first finished, so it proves a later poll too."""
        Queue("default").pause()
        held = tasks.add.enqueue(1, 1)
        first = tasks.add.using(queue_name="other").enqueue(2, 2)
        Supervisor(self)
        wait_until(lambda: finished(first.id), timeout=30)
        self.assertEqual(tasks.add.get_result(held.id).status, "READY")
        second = tasks.add.using(queue_name="other").enqueue(3, 3)
        wait_until(lambda: finished(second.id), timeout=30)
        self.assertEqual(tasks.add.get_result(held.id).status, "READY")
        self.assertLess(
            Job.objects.get(result_id=held.id).pk, Job.objects.get(result_id=second.id).pk
        )
        Queue("default").resume()
        wait_until(lambda: finished(held.id), timeout=30)

    def test_a_pause_is_in_force_when_it_returns(self) -> None:
        """The worker's list of pauses is cached for a second; the claim
        itself checks the pause table. Jobs enqueued right after
        ``pause()`` returned stay ready, even for a worker that read its
        pauses just before: the job of another queue enqueued after them
        finishing proves a poll that saw them."""
        Supervisor(self)
        warm = tasks.add.using(queue_name="other").enqueue(0, 0)
        wait_until(lambda: finished(warm.id), timeout=30)
        for round_ in range(3):
            Queue("default").pause()
            held = [tasks.add.enqueue(round_, i) for i in range(5)]
            after = tasks.add.using(queue_name="other").enqueue(round_, 0)
            wait_until(partial(finished, after.id), timeout=30)
            statuses = [tasks.add.get_result(r.id).status for r in held]
            self.assertEqual(statuses, ["READY"] * 5, f"round {round_}")
            Queue("default").resume()
            for result in held:
                wait_until(partial(finished, result.id), timeout=30)

    def test_lifecycle_hooks_run_in_every_process(self) -> None:
        log = Path(tempfile.mkdtemp()) / "hooks.log"
        os.environ["ROBUST_QUEUE_HOOK_LOG"] = str(log)
        self.addCleanup(os.environ.pop, "ROBUST_QUEUE_HOOK_LOG")
        supervisor = Supervisor(self, hooks=HOOKS)
        supervisor.children("worker")
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=15), 0)
        lines = [line.split()[:2] for line in log.read_text().splitlines()]
        for kind in ("supervisor", "worker"):
            self.assertEqual(
                [event for k, event in lines if k == kind], ["on_start", "on_stop", "on_exit"]
            )


IDLE = " is idle: it polls every "
# The worker logs IDLE at DEBUG each time it goes idle after work.
DEBUG = {"ROBUST_QUEUE_LOG_LEVEL": "DEBUG"}


def went_idle(supervisor: Supervisor, times: int) -> bool:
    return supervisor.output().count(IDLE) >= times


def pickup_delays(supervisor: Supervisor, count: int) -> list[float]:
    """Seconds from enqueue to start of ``count`` jobs enqueued one at a
    time into an idle worker: each after the worker has polled, found
    nothing and gone idle again (its log says so)."""
    delays = []
    for _ in range(count):
        idle = supervisor.output().count(IDLE)
        result = tasks.add.enqueue(1, 1)
        job = wait_until(
            lambda result=result: Job.objects.filter(
                result_id=result.id, started_at__isnull=False
            ).first(),
            timeout=10,
            interval=0.01,
        )
        delays.append((job.started_at - job.enqueued_at).total_seconds())
        wait_until(partial(went_idle, supervisor, idle + 1), timeout=30)
    return delays


@skipUnless(connection.vendor == "postgresql", "LISTEN/NOTIFY exists only on PostgreSQL")
class NotifyTests(TransactionTestCase):
    def test_an_idle_worker_wakes_on_notify_not_on_polling(self) -> None:
        """With 5 s polling, a median pickup under 1 s proves NOTIFY woke it."""
        workers = [{"queues": ["*"], "threads": 1, "polling_interval": 5}]
        supervisor = Supervisor(self, workers=workers, env=DEBUG)
        wait_until(self._a_session_listens, timeout=30)
        wait_until(partial(went_idle, supervisor, 1), timeout=30)
        delays = pickup_delays(supervisor, 5)
        self.assertLess(statistics.median(delays), 1.0, delays)

    @staticmethod
    def _a_session_listens() -> bool:
        """The worker's listener has run LISTEN on this test database."""
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND query LIKE 'LISTEN %%'"
            )
            return bool(cursor.fetchone()[0])


@skipUnless(
    connection.vendor in ("sqlite", "mysql"), "PostgreSQL's listener is NOTIFY (NotifyTests)"
)
class ReadyWatchTests(TransactionTestCase):
    def test_an_idle_worker_wakes_on_a_new_job_not_on_polling(self) -> None:
        """An idle worker sleeps 5 s between polls (its longest sleep), so
        five pickups each under 1.5 s are the watch's doing (by polling
        alone, all five would be with a chance of 0.3 ** 5)."""
        workers = [{"queues": ["*"], "threads": 1, "polling_interval": 20}]
        supervisor = Supervisor(self, workers=workers, env=DEBUG)
        wait_until(partial(went_idle, supervisor, 1), timeout=30)
        delays = pickup_delays(supervisor, 5)
        self.assertLess(max(delays), 1.5, delays)


class PruneSubcommandTests(TransactionTestCase):
    def test_robust_queue_prune_deletes_only_old_finished_jobs(self) -> None:
        from datetime import timedelta

        from django.conf import settings
        from django.utils import timezone

        from tests.helpers import work_off

        old, recent = tasks.add.enqueue(1, 1), tasks.add.enqueue(2, 2)
        work_off()
        Job.objects.filter(result_id=old.id).update(finished_at=timezone.now() - timedelta(days=3))
        waiting = tasks.add.enqueue(3, 3)
        env = dict(os.environ, ROBUST_QUEUE_DB_NAME=settings.DATABASES["default"]["NAME"])
        done = subprocess.run(
            [sys.executable, "manage.py", "robust_queue", "prune", "--older-than", "1d"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("Deleted 1 finished and 0 failed job(s).", done.stdout)
        self.assertEqual(
            set(Job.objects.values_list("result_id", flat=True)), {recent.id, waiting.id}
        )


@skipUnless(connection.vendor == "postgresql", "terminating backends is PostgreSQL's")
class ConnectionLossTests(TransactionTestCase):
    def test_workers_replace_broken_connections_and_go_on(self) -> None:
        first = tasks.add.enqueue(1, 1)
        supervisor = Supervisor(self)
        [worker] = supervisor.children("worker")
        wait_until(
            lambda: Job.objects.filter(result_id=first.id, finished_at__isnull=False).exists(),
            timeout=30,
        )
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        second = tasks.add.enqueue(2, 2)
        wait_until(
            lambda: Job.objects.filter(result_id=second.id, finished_at__isnull=False).exists(),
            timeout=30,
        )
        # The same worker process ran it: it was not replaced.
        self.assertEqual(Job.objects.get(result_id=second.id).worker_ids, [worker.name])
