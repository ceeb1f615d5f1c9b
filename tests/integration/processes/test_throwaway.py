"""A start-up step in a throwaway child: its result or exception comes
back, what it imports stays in the child, and it runs in this process
where forking is not safe. Each case runs in a fresh interpreter, as the
supervisor's start does (this test process has connections and threads).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from django.conf import settings
from django.test import TransactionTestCase

from tests.processes.support import ROOT

# Run first in each script: Django set up on the test database.
PREAMBLE = """
import json, os, sys, threading
import django
django.setup()
from django.db import DatabaseError, connection
from robust_queue.processes import throwaway

def imports_a_module():
    import tabnanny
    return os.getpid()
"""


def run_script(body: str) -> dict[str, object]:
    """The JSON the script prints last."""
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="testproject.settings",
        ROBUST_QUEUE_DB_NAME=str(settings.DATABASES["default"]["NAME"]),
    )
    done = subprocess.run(
        [sys.executable, "-c", PREAMBLE + textwrap.dedent(body)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


class ThrowawayTests(TransactionTestCase):
    def test_a_step_runs_in_a_child_and_its_imports_stay_there(self) -> None:
        seen = run_script("""
            pid = throwaway.run(imports_a_module)
            print(json.dumps({"child": pid != os.getpid(), "loaded": "tabnanny" in sys.modules}))
        """)
        self.assertEqual(seen, {"child": True, "loaded": False})

    def test_the_steps_exception_is_raised_here_with_its_class_and_message(self) -> None:
        seen = run_script("""
            def fails():
                raise DatabaseError("the server went away")
            try:
                throwaway.run(fails)
            except DatabaseError as exc:
                print(json.dumps({"raised": type(exc).__name__, "message": str(exc),
                                  "notes": getattr(exc, "__notes__", [])}))
        """)
        self.assertEqual(seen["raised"], "DatabaseError")
        self.assertEqual(seen["message"], "the server went away")
        # Where it was raised, in the child, goes with it.
        [note] = seen["notes"]  # type: ignore[misc]
        self.assertIn("In a start-up step's child process", note)
        self.assertIn("in fails", note)

    def test_an_exception_that_does_not_pickle_comes_back_named(self) -> None:
        seen = run_script("""
            def fails():
                class Local(Exception):
                    pass
                raise Local("made in the step")
            try:
                throwaway.run(fails)
            except RuntimeError as exc:
                print(json.dumps({"message": str(exc)}))
        """)
        self.assertEqual(seen, {"message": "Local: made in the step"})

    def test_a_result_that_does_not_pickle_is_a_clear_error(self) -> None:
        seen = run_script("""
            try:
                throwaway.run(lambda: threading.Lock())
            except TypeError as exc:
                print(json.dumps({"message": str(exc)}))
        """)
        self.assertIn("returned what cannot be sent back", str(seen["message"]))

    def test_a_child_that_dies_without_answering_is_an_error_not_a_hang(self) -> None:
        seen = run_script("""
            try:
                throwaway.run(lambda: os._exit(3))
            except RuntimeError as exc:
                print(json.dumps({"message": str(exc)}))
        """)
        self.assertIn("ended without an answer", str(seen["message"]))

    def test_with_another_thread_running_the_step_runs_here(self) -> None:
        seen = run_script("""
            stop = threading.Event()
            threading.Thread(target=stop.wait).start()
            pid = throwaway.run(imports_a_module)
            stop.set()
            print(json.dumps({"here": pid == os.getpid(), "loaded": "tabnanny" in sys.modules}))
        """)
        self.assertEqual(seen, {"here": True, "loaded": True})

    def test_when_fork_fails_the_step_runs_here(self) -> None:
        seen = run_script("""
            def no_fork():
                raise BlockingIOError(11, "Resource temporarily unavailable")
            os.fork = no_fork
            pid = throwaway.run(imports_a_module)
            print(json.dumps({"here": pid == os.getpid(), "loaded": "tabnanny" in sys.modules}))
        """)
        self.assertEqual(seen, {"here": True, "loaded": True})

    def test_with_a_connection_open_the_step_runs_here(self) -> None:
        seen = run_script("""
            connection.ensure_connection()
            pid = throwaway.run(imports_a_module)
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                one = cursor.fetchone()[0]
            print(json.dumps({"here": pid == os.getpid(), "still_usable": one == 1}))
        """)
        self.assertEqual(seen, {"here": True, "still_usable": True})

    def test_the_commands_checks_report_as_before_and_leave_nothing_loaded(self) -> None:
        # A failing system check still fails the command with Django's
        # message; a passing run leaves the URLconf and migrations unloaded.
        seen = run_script("""
            from django.conf import settings
            from django.core.management.base import SystemCheckError
            from django.test.utils import override_settings
            from robust_queue.management.commands.robust_queue import Command
            from robust_queue.operations import startup
            from robust_queue.processes.launch import build_config

            Command().check()
            config = build_config({})
            messages = startup.check(config)
            loaded = {
                "urlconf": settings.ROOT_URLCONF in sys.modules,
                "migrations": "robust_queue.migrations.0001_initial" in sys.modules,
            }
            with override_settings(ROBUST_QUEUE={"worker": []}):
                try:
                    Command().check()
                    failure = None
                except SystemCheckError as exc:
                    failure = str(exc)
            print(json.dumps({"errors": [m.msg for m in messages if m.is_serious()],
                              "loaded": loaded, "failure": failure}))
        """)
        self.assertEqual(seen["errors"], [])
        self.assertEqual(seen["loaded"], {"urlconf": False, "migrations": False})
        self.assertIn("SystemCheckError", str(seen["failure"]))
        self.assertIn("unknown key 'worker'", str(seen["failure"]))
