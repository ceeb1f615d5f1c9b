"""A process's outage report: one warning per outage, one line when the
database is back, whichever threads fail meanwhile (no database: the
errors are the ones a driver raises)."""

from __future__ import annotations

import threading

from django.db import OperationalError
from django.test import SimpleTestCase

from robust_queue.processes.outage import FailureGate, OutageReport

LOGGER = "robust_queue.processes.outage"
DOWN = OperationalError("connection failed:\n  server closed the connection")


class OutageReportTests(SimpleTestCase):
    def test_many_threads_failing_in_one_outage_warn_once(self) -> None:
        """Eight threads failing 50 times each: one warning, one line."""
        report = OutageReport("worker-a")
        start = threading.Barrier(8)

        def fail() -> None:
            start.wait()
            for _ in range(50):
                report.failed(DOWN, "Cancel poll")

        with self.assertLogs(LOGGER, "WARNING") as logs:
            threads = [threading.Thread(target=fail) for _ in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        self.assertEqual(len(logs.output), 1)
        self.assertEqual(
            logs.records[0].getMessage(),
            "Cancel poll of worker-a failed: connection failed: server closed the "
            "connection; retrying until the database is back",
        )
        self.assertEqual((report.outages, report.healthy_for()), (1, 0.0))

    def test_the_database_coming_back_is_told_once_and_ends_the_outage(self) -> None:
        report = OutageReport("worker-a")
        with self.assertNoLogs(LOGGER):
            self.assertIs(report.recovered(), False)
        with self.assertLogs(LOGGER, "WARNING"):
            self.assertIs(report.failed(DOWN, "Heartbeat"), True)
        with self.assertLogs(LOGGER, "INFO") as logs:
            self.assertIs(report.recovered(), True)
            self.assertIs(report.recovered(), False)
        self.assertEqual(len(logs.output), 1)
        self.assertIn("worker-a reaches the database again after", logs.output[0])
        self.assertGreater(report.healthy_for(), 0)
        with self.assertLogs(LOGGER, "WARNING"):
            self.assertIs(report.failed(DOWN, "Work"), True)
        self.assertEqual(report.outages, 2)


class FailureGateTests(SimpleTestCase):
    def test_a_side_task_reports_its_first_failure_since_its_last_success(self) -> None:
        """A poll failing on its own while the heartbeat gets through
        does not add a warning per try."""
        reported: list[str] = []
        gate = FailureGate(lambda error, doing: reported.append(doing), "LISTEN")
        for _ in range(5):
            gate.failed(DOWN)
        self.assertEqual(reported, ["LISTEN"])
        gate.succeeded()
        gate.failed(DOWN)
        self.assertEqual(reported, ["LISTEN", "LISTEN"])

    def test_without_a_process_it_warns_itself_once(self) -> None:
        gate = FailureGate(None, "Cancel poll")
        with self.assertLogs(LOGGER, "WARNING") as logs:
            gate.failed(DOWN)
            gate.failed(DOWN)
        self.assertEqual(len(logs.output), 1)
        self.assertIn("Cancel poll failed: connection failed", logs.output[0])
