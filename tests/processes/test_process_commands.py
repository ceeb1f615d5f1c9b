"""Quiet and stop a real worker from its admin page (issue 28 §4).

The admin writes the command on the worker's row; the worker reads it on
its heartbeat (0.5 s here): quiet, it claims nothing more and stays
alive; stopped, it exits as on TERM and its supervisor starts a fresh
worker, which claims what the quiet one left.
"""

from __future__ import annotations

import signal

from django.contrib.auth.models import User
from django.db.models import Max
from django.test import TransactionTestCase
from django.urls import reverse

from robust_queue.models import Job, Process, QueueAction
from testproject import tasks
from tests.helpers import wait_until
from tests.processes.support import Supervisor, is_alive, wait_dead


def _finished(result_id: str) -> bool:
    return Job.objects.filter(result_id=result_id, finished_at__isnull=False).exists()


def _command(process: Process) -> str | None:
    return Process.objects.filter(pk=process.pk).values_list("command", flat=True).first()


class ProcessCommandTests(TransactionTestCase):
    def setUp(self) -> None:
        self.client.force_login(User.objects.create_superuser("root", password="pw"))

    def _post(self, process: Process, verb: str) -> None:
        url = reverse("admin:robust_queue_process_command", args=[process.pk, verb])
        before = _command(process)
        self.assertEqual(self.client.get(url).status_code, 200)  # asks first
        self.assertEqual(_command(process), before)
        self.assertEqual(self.client.post(url).status_code, 302)

    def _beats_after(self, process: Process, since: object, beats: int = 2) -> None:
        """Wait until ``process`` has heartbeat ``beats`` times since ``since``."""
        seen: set[object] = set()

        def beaten() -> bool:
            at = Process.objects.filter(pk=process.pk).values_list("last_heartbeat_at", flat=True)
            value = at.first()
            if value is not None and value > since:
                seen.add(value)
            return len(seen) >= beats

        wait_until(beaten, timeout=30)

    def test_quiet_stops_claiming_then_stop_replaces_the_worker(self) -> None:
        supervisor = Supervisor(self, dispatchers=[])
        (worker,) = supervisor.children("worker")
        first = tasks.echo.enqueue("before")
        wait_until(lambda: _finished(first.id), timeout=30)

        self._post(worker, "quiet")
        wait_until(lambda: _command(worker) == "quieted", timeout=30)
        page = self.client.get(reverse("admin:robust_queue_process_change", args=[worker.pk]))
        self.assertContains(page, 'class="rq-state rq-state-paused rq-command-quieted">quiet<')
        listing = self.client.get(reverse("admin:robust_queue_process_changelist"))
        self.assertContains(listing, "rq-command-quieted")

        # The only worker is quiet: a new job stays ready while it lives on.
        held = tasks.echo.enqueue("held")
        enqueued = Job.objects.filter(result_id=held.id).values_list("enqueued_at", flat=True)[0]
        self._beats_after(worker, enqueued)
        self.assertTrue(is_alive(worker.pid))
        self.assertEqual(tasks.echo.get_result(held.id).status, "READY")
        self.assertIn("quiets (asked from the admin)", supervisor.output())

        self._post(worker, "stop")
        wait_dead(worker.pid, timeout=30)
        # Its replacement claims what it left.
        wait_until(lambda: _finished(held.id), timeout=30)
        (fresh,) = Process.objects.filter(kind="worker", supervisor__pid=supervisor.pid)
        self.assertNotEqual(fresh.pid, worker.pid)
        self.assertIsNone(fresh.command)
        self.assertIn("starting a fresh one now", supervisor.output())
        self.assertEqual(
            list(QueueAction.objects.order_by("pk").values_list("verb", flat=True)),
            ["quiet worker", "stop worker"],
        )
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=30), 0)

    def test_a_stopped_worker_finishes_its_running_job_first(self) -> None:
        supervisor = Supervisor(self, dispatchers=[], shutdown_timeout=20)
        (worker,) = supervisor.children("worker")
        running = tasks.sleep_for.enqueue(2)
        wait_until(
            lambda: Job.objects.filter(
                result_id=running.id, claimed_execution__isnull=False
            ).exists(),
            timeout=30,
        )
        self._post(worker, "stop")
        wait_dead(worker.pid, timeout=30)
        self.assertEqual(tasks.sleep_for.get_result(running.id).status, "SUCCESSFUL")
        supervisor.children("worker")  # replaced
        fresh = Process.objects.filter(kind="worker", supervisor__pid=supervisor.pid).aggregate(
            pid=Max("pid")
        )
        self.assertNotEqual(fresh["pid"], worker.pid)

    def test_thread_mode_replaces_a_stopped_worker_as_a_clean_exit(self) -> None:
        supervisor = Supervisor(self, "--mode", "thread", dispatchers=[])
        (worker,) = supervisor.children("worker")
        self._post(worker, "stop")
        wait_until(
            lambda: Process.objects.filter(kind="worker").exclude(pk=worker.pk).exists(),
            timeout=30,
        )
        wait_until(lambda: not Process.objects.filter(pk=worker.pk).exists(), timeout=30)
        output = supervisor.output()
        self.assertIn("stopped (asked to stop from the admin); starting a fresh one now", output)
        job = tasks.echo.enqueue("after")
        wait_until(lambda: _finished(job.id), timeout=30)
