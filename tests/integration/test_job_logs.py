"""A job's own log: what a task logs during each attempt is kept with the
attempt, masked and capped, shown on the job page; nothing at all for a
task that does not ask for it (real database, in process)."""

from __future__ import annotations

import logging
import threading

from django.contrib.auth.models import User
from django.db import connection
from django.test import TestCase, TransactionTestCase, override_settings
from django.test.utils import CaptureQueriesContext

from robust_queue.exceptions import ConfigurationError
from robust_queue.models import Job, attempt_logs
from robust_queue.options.job_logs import job_log
from robust_queue.running import job_logs
from robust_queue.running.performing import perform
from testproject import job_log_tasks
from tests.helpers import claim, make_process, run_in_threads
from tests.integration.admin.base import job_url

SECRET = "hunter2-8c1f4e"


def run(result_id: str) -> Job:
    [claimed] = claim()
    perform(claimed)
    return Job.objects.get(result_id=result_id)


def texts(job: Job) -> list[str]:
    return [entry["text"] for entry in attempt_logs.stored_logs(job.attempt_logs)]


class CaptureTests(TestCase):
    def test_a_task_s_records_are_kept_with_its_attempt_masked(self) -> None:
        result = job_log_tasks.chatty.enqueue(SECRET)
        job = run(result.id)
        [entry] = job.attempt_logs
        self.assertEqual((entry["attempt"], entry["worker_id"]), (1, job.worker_ids[-1]))
        lines = entry["text"].splitlines()
        self.assertEqual(len(lines), 3, entry["text"])
        self.assertRegex(
            lines[0],
            r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} INFO testproject\.job_log_tasks: "
            r"starting with 3 items$",
        )
        self.assertIn("WARNING testproject.job_log_tasks: calling the API with token=", lines[1])
        self.assertNotIn(SECRET, entry["text"])
        self.assertIsNotNone(job.finished_at)

    def test_a_task_that_does_not_ask_keeps_nothing_and_writes_nothing_more(self) -> None:
        result = job_log_tasks.quiet.enqueue()
        [claimed] = claim()
        self.assertIs(job_logs.capturing(claimed, job_log_tasks.quiet), job_logs._OFF)
        with CaptureQueriesContext(connection) as queries:
            perform(claimed)
        self.assertFalse([q for q in queries.captured_queries if "attempt_logs" in q["sql"]])
        self.assertIsNone(Job.objects.get(result_id=result.id).attempt_logs)

    def test_no_handler_is_installed_until_a_job_keeps_a_log(self) -> None:
        root = logging.getLogger()
        root.removeHandler(job_logs._HANDLER)
        self.addCleanup(root.removeHandler, job_logs._HANDLER)
        run(job_log_tasks.quiet.enqueue().id)
        self.assertNotIn(job_logs._HANDLER, root.handlers)
        run(job_log_tasks.chatty.enqueue(SECRET).id)
        self.assertIn(job_logs._HANDLER, root.handlers)

    @override_settings(ROBUST_QUEUE={"job_log": True})
    def test_the_project_wide_setting_turns_it_on_and_a_task_can_turn_it_off(self) -> None:
        result = job_log_tasks.quiet.enqueue()
        self.assertIn(
            "WARNING testproject.job_log_tasks: nobody keeps this", texts(run(result.id))[0]
        )
        off = job_log(enabled=False)(job_log_tasks.quiet)
        self.assertIs(job_logs.capturing(None, off), job_logs._OFF)  # type: ignore[arg-type]

    def test_a_change_of_the_setting_takes_effect_though_it_is_read_once(self) -> None:
        """The setting is read once per process, and again after any
        change (override_settings): a job after it keeps its log."""
        self.assertIs(job_logs.capturing(None, job_log_tasks.quiet), job_logs._OFF)  # type: ignore[arg-type]
        with override_settings(ROBUST_QUEUE={"job_log": "WARNING"}):
            result = job_log_tasks.quiet.enqueue()
            self.assertIn("nobody keeps this", texts(run(result.id))[0])
        self.assertIs(job_logs.capturing(None, job_log_tasks.quiet), job_logs._OFF)  # type: ignore[arg-type]

    @override_settings(ROBUST_QUEUE={"job_log": "ERROR"})
    def test_the_setting_s_level_and_the_task_s_own_level(self) -> None:
        result = job_log_tasks.quiet.enqueue()
        # Nothing at the level: nothing written.
        self.assertIsNone(run(result.id).attempt_logs)
        result = job_log_tasks.warnings_only.enqueue()
        [text] = texts(run(result.id))
        self.assertIn("at the level", text)
        self.assertNotIn("below the level", text)

    def test_each_attempt_keeps_its_own_log_with_the_traceback(self) -> None:
        result = job_log_tasks.fails_once_then_succeeds.enqueue("m-retry")
        run(result.id)
        job = run(result.id)
        self.assertIsNotNone(job.finished_at)
        first, second = job.attempt_logs
        self.assertEqual((first["attempt"], second["attempt"]), (1, 2))
        self.assertIn("first try for m-retry", first["text"])
        self.assertIn("ERROR testproject.job_log_tasks: lookup failed\nTraceback", first["text"])
        self.assertIn("KeyError: 'm-retry'", first["text"])
        self.assertNotIn("second try", first["text"])
        self.assertIn("second try for m-retry", second["text"])

    def test_a_log_past_64_kib_is_cut_with_a_marker_saying_how_much_more(self) -> None:
        lines, width = 1000, 100
        result = job_log_tasks.flood.enqueue(lines, width)
        [text] = texts(run(result.id))
        body, _, marker = text.rstrip("\n").rpartition("\n")
        line_bytes = len("2026-01-01 00:00:00.000 WARNING testproject.job_log_tasks: 00000 ")
        total = lines * (line_bytes + width + 1)
        self.assertEqual(marker, f"[log truncated: {total - job_logs.MAX_BYTES} more bytes]")
        self.assertLessEqual(len(body.encode()), job_logs.MAX_BYTES)
        self.assertGreater(len(body.encode()), job_logs.MAX_BYTES - line_bytes - width - 1)

    @override_settings(ROBUST_QUEUE={"mask_values": ["("]})
    def test_a_bad_mask_setting_masks_with_the_default_rules(self) -> None:
        result = job_log_tasks.chatty.enqueue(SECRET)
        job = run(result.id)
        self.assertIsNotNone(job.finished_at)
        [text] = texts(job)
        self.assertIn("calling the API with token=", text)
        self.assertNotIn(SECRET, text)

    def test_a_record_that_does_not_format_is_kept_as_such(self) -> None:
        record = logging.makeLogRecord(
            {"name": "app", "levelname": "WARNING", "msg": "%d rows", "args": ("many",)}
        )
        self.assertIn(
            "WARNING app: '%d rows' (its arguments do not format: TypeError(",
            job_logs._line(record),
        )

    def test_an_async_task_s_records_are_kept(self) -> None:
        result = job_log_tasks.async_chatty.enqueue("loop")
        self.assertIn("WARNING testproject.job_log_tasks: async loop", texts(run(result.id))[0])

    def test_nothing_is_written_once_the_claim_is_gone(self) -> None:
        result = job_log_tasks.quiet.enqueue()
        [claimed] = claim(process=make_process())
        job = Job.objects.get(result_id=result.id)
        entry = {"attempt": 1, "worker_id": "w", "text": "x"}
        self.assertIs(attempt_logs.record("default", job.pk, claimed.pk + 1, [entry]), False)
        self.assertIs(attempt_logs.record("default", job.pk, claimed.pk, [entry]), True)
        self.assertEqual(Job.objects.get(pk=job.pk).attempt_logs, [entry])

    def test_only_the_last_attempts_are_kept(self) -> None:
        stored: list[dict[str, object]] | None = None
        for number in range(1, attempt_logs.KEPT_ATTEMPTS + 4):
            stored = attempt_logs.with_entry(stored, {"attempt": number, "text": str(number)})
        assert stored is not None
        self.assertEqual(len(stored), attempt_logs.KEPT_ATTEMPTS)
        self.assertEqual(stored[-1]["attempt"], attempt_logs.KEPT_ATTEMPTS + 3)
        # A hand-edited column is read as far as it goes.
        self.assertEqual(attempt_logs.stored_logs({"not": "a list"}), [])
        self.assertEqual(attempt_logs.stored_logs(["x", {"attempt": 1}]), [{"attempt": 1}])


class BadDeclarationTests(TestCase):
    def test_bad_options_are_clear_errors(self) -> None:
        with self.assertRaisesMessage(
            ConfigurationError,
            "job_log(): 'level' must be a logging level: a number or a name such as 'INFO', "
            "not 'LOUD'.",
        ):
            job_log(level="LOUD")
        with self.assertRaisesMessage(ConfigurationError, "'enabled' must be True or False"):
            job_log(enabled="yes")  # type: ignore[arg-type]
        with self.assertRaisesMessage(ConfigurationError, "@job_log must be stacked over @task"):
            job_log()(lambda: None)  # type: ignore[arg-type]

    @override_settings(ROBUST_QUEUE={"job_log": "LOUD"})
    def test_a_bad_setting_names_the_key(self) -> None:
        with self.assertRaisesMessage(ConfigurationError, 'ROBUST_QUEUE["job_log"] must be'):
            job_logs.capturing(None, job_log_tasks.quiet)  # type: ignore[arg-type]


class ThreadTests(TransactionTestCase):
    def test_two_jobs_running_at_once_keep_only_their_own_records(self) -> None:
        """Two worker threads run two capturing jobs that log interleaved
        (they meet twice); this thread logs meanwhile too. Each job's log
        holds its own lines, all of them, and nothing else."""
        alpha = job_log_tasks.alongside.enqueue("alpha", 40)
        beta = job_log_tasks.alongside.enqueue("beta", 40)
        claims = claim()
        outsider = logging.getLogger("testproject.job_log_tasks")
        stop = threading.Event()

        def chatter() -> None:
            while not stop.is_set():
                outsider.warning("outsider")
                stop.wait(0.001)

        noise = threading.Thread(target=chatter)
        noise.start()
        try:
            run_in_threads([lambda c=c: perform(c) for c in claims])  # type: ignore[misc]
        finally:
            stop.set()
            noise.join()
        for result, name, other in ((alpha, "alpha", "beta"), (beta, "beta", "alpha")):
            [text] = texts(Job.objects.get(result_id=result.id))
            self.assertEqual(text.count(f"{name} line"), 40)
            self.assertNotIn(other, text)
            self.assertNotIn("outsider", text)


class JobPageTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.user = User.objects.create_superuser("root", password="pw")

    def test_the_job_page_shows_each_attempt_s_log_escaped_and_masked(self) -> None:
        result = job_log_tasks.fails_once_then_succeeds.enqueue("<b>page</b>")
        run(result.id)
        job = run(result.id)
        # A value stored before a mask rule existed, or edited by hand.
        job.attempt_logs[1]["text"] += f"password={SECRET}\n"
        job.save(update_fields=["attempt_logs"])
        self.client.force_login(self.user)
        html = self.client.get(job_url("change", job.pk)).content.decode()
        self.assertIn("Log (2 attempts)", html)
        self.assertIn("first try for &lt;b&gt;page&lt;/b&gt;", html)
        self.assertIn("second try for &lt;b&gt;page&lt;/b&gt;", html)
        self.assertNotIn("<b>page</b>", html)
        self.assertNotIn(SECRET, html)

    def test_a_secret_logged_by_a_task_never_reaches_the_page(self) -> None:
        result = job_log_tasks.chatty.enqueue(SECRET)
        job = run(result.id)
        self.client.force_login(self.user)
        html = self.client.get(job_url("change", job.pk)).content.decode()
        self.assertIn("calling the API with token=", html)
        self.assertNotIn(SECRET, html)

    def test_a_job_without_a_log_has_no_log_panel(self) -> None:
        result = job_log_tasks.quiet.enqueue()
        job = run(result.id)
        self.client.force_login(self.user)
        html = self.client.get(job_url("change", job.pk)).content.decode()
        self.assertNotIn('id="rq-attempt-logs"', html)
