"""One log line when an attempt starts and one when it ends, with the
fields as ``extra`` for JSON formatters (no database: unsaved jobs)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from django.test import SimpleTestCase

from robust_queue.models import Job
from robust_queue.running import attempt_log
from robust_queue.running.attempt_log import Attempt

ENQUEUED = datetime(2031, 1, 1, 12, 0, tzinfo=UTC)


def job(**fields: object) -> Job:
    values: dict[str, object] = {
        "result_id": "r-1",
        "task_path": "shop.tasks.send",
        "queue_name": "mail",
        "enqueued_at": ENQUEUED,
        "worker_ids": ["w-1", "w-2"],
        "last_attempted_at": ENQUEUED + timedelta(milliseconds=1500),
    }
    return Job(**{**values, **fields})


class AttemptLogTests(SimpleTestCase):
    def records(self, attempt: Attempt, outcome: str | None = None) -> list[logging.LogRecord]:
        with self.assertLogs(attempt_log.logger, "INFO") as logs:
            attempt.started()
            if outcome is not None:
                attempt.finished(outcome)
        return logs.records

    def test_the_start_line_and_its_fields(self) -> None:
        [record] = self.records(Attempt(job()))
        self.assertEqual(
            record.getMessage(),
            "Job r-1 started: shop.tasks.send on queue mail, attempt 2, by w-2 after 1500 ms",
        )
        self.assertEqual(
            {
                name: getattr(record, name)
                for name in ("result_id", "task", "queue", "attempt", "worker", "wait_ms")
            },
            {
                "result_id": "r-1",
                "task": "shop.tasks.send",
                "queue": "mail",
                "attempt": 2,
                "worker": "w-2",
                "wait_ms": 1500,
            },
        )

    def test_the_end_line_adds_run_time_and_outcome(self) -> None:
        _, end = self.records(Attempt(job()), attempt_log.RETRIED)
        self.assertRegex(
            end.getMessage(),
            r"^Job r-1 retried: shop\.tasks\.send on queue mail, attempt 2, in \d+ ms$",
        )
        self.assertEqual(end.outcome, "retried")  # type: ignore[attr-defined]
        self.assertGreaterEqual(end.run_ms, 0)  # type: ignore[attr-defined]

    def test_a_retried_job_waits_from_its_retry_time(self) -> None:
        retry_at = ENQUEUED + timedelta(minutes=5)
        attempt = Attempt(
            job(run_after=retry_at, last_attempted_at=retry_at + timedelta(seconds=2))
        )
        [record] = self.records(attempt)
        self.assertEqual(record.wait_ms, 2000)  # type: ignore[attr-defined]

    def test_an_attempt_that_started_early_waited_nothing(self) -> None:
        early = job(last_attempted_at=ENQUEUED - timedelta(seconds=3))
        [record] = self.records(Attempt(early))
        self.assertEqual(record.wait_ms, 0)  # type: ignore[attr-defined]

    def test_a_malformed_worker_list_counts_as_one_attempt(self) -> None:
        """As the retry policy counts it (``stored_worker_ids``); None is
        no attempt at all."""
        [record] = self.records(Attempt(job(worker_ids={"not": "a list"})))
        self.assertEqual(
            (record.attempt, record.worker),  # type: ignore[attr-defined]
            (1, "{'not': 'a list'}"),
        )
        [record] = self.records(Attempt(job(worker_ids=None)))
        self.assertEqual((record.attempt, record.worker), (0, ""))  # type: ignore[attr-defined]

    def test_nothing_is_built_when_the_level_is_off(self) -> None:
        attempt = Attempt(job())
        previous = attempt_log.logger.level
        attempt_log.logger.setLevel(logging.WARNING)
        self.addCleanup(attempt_log.logger.setLevel, previous)
        seen: list[logging.LogRecord] = []
        handler = logging.Handler()
        handler.emit = seen.append  # type: ignore[method-assign]
        attempt_log.logger.addHandler(handler)
        self.addCleanup(attempt_log.logger.removeHandler, handler)
        attempt.started()
        attempt.finished(attempt_log.SUCCESSFUL)
        self.assertEqual(seen, [])
        self.assertIsNone(attempt._fields)
