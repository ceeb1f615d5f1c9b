"""A project without ``django.contrib.admin`` (``testproject_noadmin``:
only ``robust_queue`` and its own app installed) runs every command and a
real supervisor that drains its jobs; a misspelt backend path gets one
clear message, in that project and in the one with the admin."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from django.conf import settings
from django.test import TransactionTestCase

from robust_queue.models import Job, Pause
from tests.helpers import wait_until
from tests.processes.support import ROOT, Supervisor

NO_ADMIN = "testproject_noadmin.settings"
MISSPELT = "robust_queue.backends.RobustQueueBackend"


def manage(
    *args: str, settings_module: str = NO_ADMIN, **env: str
) -> subprocess.CompletedProcess[str]:
    """``manage.py *args`` in a subprocess on this test's database."""
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": settings_module,
        "ROBUST_QUEUE_DB_NAME": settings.DATABASES["default"]["NAME"],
        "ROBUST_QUEUE_DEBUG": "0",
        **env,
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


class NoAdminProjectTests(TransactionTestCase):
    def run_ok(self, *args: str) -> str:
        done = manage(*args)
        output = done.stdout + done.stderr
        self.assertEqual(done.returncode, 0, output)
        self.assertNotIn("Traceback", output)
        return output

    def enqueue(self, code: str) -> str:
        """Run ``code`` in the project's shell; its last line printed."""
        return self.run_ok("shell", "-c", code).strip().splitlines()[-1]

    def test_the_project_has_no_admin(self) -> None:
        """The settings really leave the admin and its companions out."""
        code = "from django.conf import settings; print(json.dumps(settings.INSTALLED_APPS))"
        installed = json.loads(self.enqueue(f"import json; {code}"))
        for app in ("admin", "auth", "sessions", "messages", "contenttypes"):
            self.assertNotIn(f"django.contrib.{app}", installed)
        self.assertIn("robust_queue", installed)

    def test_every_command_runs(self) -> None:
        self.assertIn("configuration is valid", self.run_ok("robust_queue", "--check"))
        self.assertIn("Processes", self.run_ok("robust_queue", "status"))
        self.assertIn("robust_queue_job_run_seconds", self.run_ok("robust_queue", "metrics"))
        self.run_ok("robust_queue", "pause", "default")
        self.assertIs(Pause.objects.filter(queue_name="default").exists(), True)
        self.run_ok("robust_queue", "resume", "default")
        self.assertIs(Pause.objects.filter(queue_name="default").exists(), False)
        self.assertIn("Retried 0 failed job(s)", self.run_ok("robust_queue", "retry-failed"))
        self.assertIn("Deleted 0 finished", self.run_ok("robust_queue", "clear"))
        self.assertIn("Deleted 0 finished", self.run_ok("robust_queue", "prune"))
        result_id = self.enqueue(
            "from testproject_noadmin.tasks import multiply; print(multiply.enqueue(2, 3).id)"
        )
        self.assertIn(result_id, self.run_ok("robust_queue", "cancel", result_id))
        job = Job.objects.get(result_id=result_id)
        self.assertIs(hasattr(job, "failed_execution"), True)
        # No supervisor runs: health answers (unhealthy), it does not crash.
        health = manage("robust_queue", "health")
        self.assertEqual(health.returncode, 1, health.stdout + health.stderr)
        self.assertNotIn("Traceback", health.stdout + health.stderr)
        self.assertIn("heartbeats", health.stdout)

    def test_a_supervisor_drains_the_project_s_jobs(self) -> None:
        supervisor = Supervisor(self, env={"DJANGO_SETTINGS_MODULE": NO_ADMIN})
        supervisor.children("worker")
        ids = json.loads(
            self.enqueue(
                "import json; from testproject_noadmin.tasks import multiply, refuse; "
                "ids = [multiply.enqueue(n, 7).id for n in range(5)]; "
                "ids.append(refuse.enqueue('no').id); print(json.dumps(ids))"
            )
        )
        jobs = Job.objects.filter(result_id__in=ids)
        succeeded = jobs.filter(finished_at__isnull=False, failed_execution__isnull=True)
        wait_until(lambda: succeeded.count() == 5, timeout=30)
        wait_until(lambda: jobs.filter(failed_execution__isnull=False).exists(), timeout=30)
        values = sorted(succeeded.values_list("return_value", flat=True))
        self.assertEqual(values, [0, 7, 14, 21, 28])


class MisspeltBackendTests(TransactionTestCase):
    def test_one_clear_message_names_the_setting_and_the_right_path(self) -> None:
        for settings_module in (NO_ADMIN, "testproject.settings"):
            with self.subTest(settings_module):
                done = manage(
                    "check", settings_module=settings_module, ROBUST_QUEUE_BACKEND_PATH=MISSPELT
                )
                output = done.stdout + done.stderr
                self.assertNotEqual(done.returncode, 0, output)
                self.assertIn(
                    f'TASKS["default"]["BACKEND"] is \'{MISSPELT}\', which cannot be imported',
                    output,
                )
                self.assertIn("Did you mean 'robust_queue.backend.RobustQueueBackend'?", output)
                self.assertNotIn("robust_queue/admin", output)
                self.assertLess(len(output.splitlines()), 30, output)
