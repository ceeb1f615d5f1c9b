"""get_result in another process sees every field the worker wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.test import TransactionTestCase

from robust_queue.running.performing import perform
from testproject import tasks
from tests.helpers import claim

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = """
import json
from testproject import tasks
r = tasks.{task}.get_result({result_id!r})
print(json.dumps({{
    "status": str(r.status), "attempts": r.attempts, "worker_ids": r.worker_ids,
    "errors": [e.exception_class_path for e in r.errors],
    "started": r.started_at is not None, "finished": r.finished_at is not None,
    "enqueued": r.enqueued_at is not None,
    "return_value": r.return_value if str(r.status) == "SUCCESSFUL" else None,
}}))
"""


def read_in_subprocess(task: str, result_id: str) -> dict:
    env = dict(os.environ, ROBUST_QUEUE_DB_NAME=settings.DATABASES["default"]["NAME"])
    output = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", SCRIPT.format(task=task, result_id=result_id)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


class OtherProcessTests(TransactionTestCase):
    def test_running_finished_and_failed_results_from_another_process(self) -> None:
        done = tasks.add.enqueue(2, 3)
        failed = tasks.fail.enqueue("x")
        running = tasks.sleep_for.using(priority=-10).enqueue(0)
        for row in claim(3):
            if row.job.result_id != running.id:
                perform(row)
        self.assertEqual(
            read_in_subprocess("add", done.id),
            {
                "status": "SUCCESSFUL",
                "attempts": 1,
                "worker_ids": ["test-worker"],
                "errors": [],
                "started": True,
                "finished": True,
                "enqueued": True,
                "return_value": 5,
            },
        )
        failed_view = read_in_subprocess("fail", failed.id)
        self.assertEqual(failed_view["status"], "FAILED")
        self.assertEqual(failed_view["errors"], ["builtins.ValueError"])
        self.assertIs(failed_view["finished"], True)
        running_view = read_in_subprocess("sleep_for", running.id)
        self.assertEqual(running_view["status"], "RUNNING")
        self.assertIs(running_view["finished"], False)
        self.assertEqual(running_view["attempts"], 1)
