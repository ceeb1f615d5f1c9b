"""Time limits and cancellation of running jobs, in a worker's pool and
watchdog (threads of this process; the hard path is in tests/processes)."""

from __future__ import annotations

import unittest

from django.test import TransactionTestCase, override_settings

from robust_queue.compat import TASK_TAKES_OPTIONS, TaskResult, TaskResultStatus
from robust_queue.models import ClaimedExecution, Job
from robust_queue.processes.pool import Pool
from robust_queue.processes.watchdog import Watch, Watchdog
from testproject import tasks
from testproject.models import LedgerEntry
from tests.helpers import claim, make_process, wait_until

TIMEOUT = "robust_queue.exceptions.TaskTimeoutError"
CANCELLED = "robust_queue.exceptions.JobCancelledError"


class WatchedPool:
    """A pool of one worker's threads under a watchdog, as a worker runs."""

    def __init__(self, test: TransactionTestCase, threads: int = 3) -> None:
        self.process = make_process()
        self.hung: list[Watch] = []
        self.watchdog = Watchdog(
            using="default", process_pk=self.process.pk, on_hung=self.hung.append
        )
        self.watchdog.start()
        self.pool = Pool(threads, using="default", on_idle=lambda: None, guard=self.watchdog.guard)
        test.addCleanup(self.close)

    def run(self, result: TaskResult) -> None:
        """Claim ``result``'s job (the only ready one) and run it."""
        (claimed,) = claim(process=self.process)
        assert claimed.job.result_id == result.id
        self.pool.post(claimed)

    def run_next(self) -> None:
        """Claim the next ready job when a thread is free, and run it."""
        wait_until(lambda: self.pool.idle, timeout=30)
        (claimed,) = claim(1, process=self.process)
        self.pool.post(claimed)

    def close(self) -> None:
        self.watchdog.stop(wait=5)
        self.pool.drain(10)
        self.pool.close()


def ended(result: TaskResult) -> Job | None:
    job = Job.objects.with_executions().get(result_id=result.id)
    return job if job.is_finished or hasattr(job, "failed_execution") else None


def error_classes(result: TaskResult) -> list[str]:
    return [error["exception_class_path"] for error in Job.objects.get(result_id=result.id).errors]


class TimeLimitTests(TransactionTestCase):
    def setUp(self) -> None:
        self.workers = WatchedPool(self)

    def test_a_python_loop_past_its_limit_ends_failed_with_a_timeout(self) -> None:
        """@time_limit(0.5) stops a 30 s loop within about a second."""
        result = tasks.spin_limited.enqueue("loop")
        self.workers.run(result)
        wait_until(lambda: ended(result), timeout=10)
        fetched = tasks.spin_limited.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.FAILED)
        self.assertEqual(error_classes(result), [TIMEOUT])
        self.assertIn("past its time limit of 0.5s", fetched.errors[0].traceback)
        keys = set(LedgerEntry.objects.values_list("key", flat=True))
        self.assertEqual(keys, {"loop:start"})
        self.assertEqual(self.workers.hung, [])

    @unittest.skipUnless(TASK_TAKES_OPTIONS, "Django 6.0's @task takes no options")
    def test_the_task_keyword_sets_a_limit(self) -> None:
        result = tasks.spin_limited_by_keyword.enqueue()
        self.workers.run(result)
        wait_until(lambda: ended(result), timeout=10)
        self.assertEqual(error_classes(result), [TIMEOUT])

    @override_settings(ROBUST_QUEUE={"time_limit": 0.5})
    def test_the_setting_is_the_default_limit(self) -> None:
        result = tasks.uncooperative.enqueue("default")
        self.workers.run(result)
        wait_until(lambda: ended(result), timeout=10)
        self.assertEqual(error_classes(result), [TIMEOUT])

    def test_a_task_within_its_limit_is_untouched(self) -> None:
        result = tasks.spin_limited.enqueue("short", seconds=0.05)
        self.workers.run(result)
        wait_until(lambda: ended(result), timeout=10)
        self.assertEqual(tasks.spin_limited.get_result(result.id).return_value, "short")

    def test_an_interrupt_inside_database_code_leaves_a_working_thread(self) -> None:
        """Stopped anywhere in a query or a transaction: the timeout is
        recorded (not a refused outcome), the task's open transaction is
        rolled back, and the same threads run the next jobs."""
        for round_ in range(4):
            result = tasks.query_loop_limited.enqueue(f"q{round_}")
            self.workers.run(result)
            wait_until(lambda result=result: ended(result), timeout=30)
            self.assertEqual(error_classes(result), [TIMEOUT])
        after = tasks.add.enqueue(1, 2)
        self.workers.run(after)
        wait_until(lambda: ended(after), timeout=10)
        self.assertEqual(tasks.add.get_result(after.id).return_value, 3)

    def test_an_error_raised_while_the_interrupt_unwinds_is_still_a_timeout(self) -> None:
        """The interrupt landing inside a library's cleanup (a COMMIT in
        atomic().__exit__) surfaces as the cleanup's error; the job still
        ends with a TaskTimeoutError, and the next job runs."""
        result = tasks.cleanup_fails_after_limit.enqueue()
        self.workers.run(result)
        wait_until(lambda: ended(result), timeout=10)
        self.assertEqual(error_classes(result), [TIMEOUT])
        after = tasks.add.enqueue(2, 3)
        self.workers.run(after)
        wait_until(lambda: ended(after), timeout=10)
        self.assertEqual(tasks.add.get_result(after.id).return_value, 5)

    def test_bodies_ending_around_their_limit_end_exactly_once(self) -> None:
        """The interrupt races the end of the body: each job ends either
        SUCCESSFUL or FAILED with one TaskTimeoutError, never stuck, never
        with the interrupt landing in the code that records the outcome."""
        # A band around the 0.2 s limit races the interrupt; one job well
        # under and one well over make both outcomes certain on a machine
        # too loaded to hit the band's edges.
        durations = [0.17 + 0.06 * (i % 7) / 6 for i in range(30)] + [0.02, 1.0]
        results = [tasks.spin_around_limit.enqueue(d) for d in durations]
        for _ in results:
            self.workers.run_next()
        wait_until(lambda: all(ended(r) for r in results), timeout=60)
        outcomes = set()
        for result in results:
            fetched = tasks.spin_around_limit.get_result(result.id)
            if fetched.status == TaskResultStatus.SUCCESSFUL:
                outcomes.add("ok")
                self.assertEqual(fetched.errors, [])
            else:
                outcomes.add("timeout")
                self.assertEqual(error_classes(result), [TIMEOUT])
        self.assertEqual(outcomes, {"ok", "timeout"})
        self.assertFalse(ClaimedExecution.objects.exists())

    def test_a_timeout_goes_through_the_retry_policy(self) -> None:
        """@retry(2): the first timeout is retried on the same row, the
        second is final."""
        result = tasks.spin_limited_retried.enqueue("again")
        self.workers.run(result)
        wait_until(
            lambda: (
                len(error_classes(result)) == 1
                and Job.objects.filter(result_id=result.id, ready_execution__isnull=False).exists()
            ),
            timeout=10,
        )
        self.workers.run(result)
        wait_until(lambda: ended(result), timeout=10)
        self.assertEqual(error_classes(result), [TIMEOUT, TIMEOUT])
        self.assertEqual(LedgerEntry.objects.filter(key="again").count(), 2)

    @override_settings(ROBUST_QUEUE={"time_limit": 0.5, "interrupt_grace_period": 30})
    def test_a_body_that_catches_the_interrupt_and_returns_still_times_out(self) -> None:
        """Interrupted for its limit, it catches the interrupt and returns
        within the grace period: FAILED with a TaskTimeoutError, its
        return value dropped, the worker not told it hung."""
        result = tasks.swallows_interrupt.enqueue("caught")
        self.workers.run(result)
        wait_until(lambda: ended(result), timeout=10)
        fetched = tasks.swallows_interrupt.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.FAILED)
        self.assertEqual(error_classes(result), [TIMEOUT])
        self.assertEqual(self.workers.hung, [])

    @override_settings(ROBUST_QUEUE={"interrupt_grace_period": 0.3})
    def test_a_body_that_swallows_the_interrupt_is_reported_hung(self) -> None:
        """The soft path failed: the worker is told (it then exits)."""
        result = tasks.spin_swallowing.enqueue(3.0)
        (claimed,) = claim(process=self.workers.process)
        with override_settings(ROBUST_QUEUE={"time_limit": 0.3, "interrupt_grace_period": 0.3}):
            self.workers.pool.post(claimed)
            wait_until(lambda: self.workers.hung, timeout=10)
        self.assertEqual(self.workers.hung[0].result_id, result.id)
        self.assertIs(ClaimedExecution.objects.filter(job__result_id=result.id).exists(), True)


class AsyncTimeLimitTests(TransactionTestCase):
    def setUp(self) -> None:
        self.workers = WatchedPool(self)

    def test_an_awaiting_async_task_past_its_limit_is_cancelled(self) -> None:
        """Cancelled where it awaits: FAILED with a timeout, not hung."""
        result = tasks.async_sleep_limited.enqueue("await")
        self.workers.run(result)
        wait_until(lambda: ended(result), timeout=10)
        self.assertEqual(error_classes(result), [TIMEOUT])
        keys = set(LedgerEntry.objects.values_list("key", flat=True))
        self.assertEqual(keys, {"await:start"})
        self.assertEqual(self.workers.hung, [])

    def test_an_async_task_that_catches_its_cancellation_still_times_out(self) -> None:
        result = tasks.async_catching.enqueue("caught")
        self.workers.run(result)
        wait_until(lambda: ended(result), timeout=10)
        self.assertEqual(error_classes(result), [TIMEOUT])
        self.assertIs(LedgerEntry.objects.filter(key="caught:caught").exists(), True)
        self.assertEqual(self.workers.hung, [])

    def test_an_async_task_within_its_limit_is_untouched(self) -> None:
        result = tasks.async_sleep_limited.enqueue("quick", seconds=0.01)
        self.workers.run(result)
        wait_until(lambda: ended(result), timeout=10)
        fetched = tasks.async_sleep_limited.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(fetched.return_value, "quick")


@override_settings(ROBUST_QUEUE={"cancel_grace_period": 0.3})
class CancelRunningTests(TransactionTestCase):
    def setUp(self) -> None:
        self.workers = WatchedPool(self)

    def test_a_cooperative_task_stops_and_ends_cancelled(self) -> None:
        result = tasks.cooperative.enqueue("coop")
        self.workers.run(result)
        wait_until(lambda: LedgerEntry.objects.filter(key="coop:start").exists())
        self.assertEqual(Job.objects.get(result_id=result.id).cancel().value, "requested")
        wait_until(lambda: ended(result), timeout=10)
        self.assertEqual(error_classes(result), [CANCELLED])
        self.assertIs(LedgerEntry.objects.filter(key="coop:stopped").exists(), True)
        self.assertEqual(tasks.cooperative.get_result(result.id).status, TaskResultStatus.FAILED)

    def test_a_task_that_ignores_the_request_is_interrupted(self) -> None:
        import robust_queue

        result = tasks.uncooperative.enqueue("deaf")
        self.workers.run(result)
        wait_until(lambda: LedgerEntry.objects.filter(key="deaf:start").exists())
        self.assertEqual(robust_queue.cancel(result.id).value, "requested")
        wait_until(lambda: ended(result), timeout=10)
        self.assertEqual(error_classes(result), [CANCELLED])
        self.assertIs(LedgerEntry.objects.filter(key="deaf:end").exists(), False)
        self.assertEqual(self.workers.hung, [])

    @override_settings(ROBUST_QUEUE={"cancel_grace_period": 0.3, "interrupt_grace_period": 30})
    def test_a_body_that_catches_the_cancel_interrupt_and_returns_ends_cancelled(self) -> None:
        """Interrupted for a cancel, it catches the interrupt and returns:
        FAILED with a JobCancelledError, not SUCCESSFUL."""
        result = tasks.swallows_interrupt.enqueue("shrug")
        self.workers.run(result)
        wait_until(lambda: LedgerEntry.objects.filter(key="shrug:start").exists())
        self.assertEqual(Job.objects.get(result_id=result.id).cancel().value, "requested")
        wait_until(lambda: ended(result), timeout=10)
        fetched = tasks.swallows_interrupt.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.FAILED)
        self.assertEqual(error_classes(result), [CANCELLED])
        self.assertEqual(self.workers.hung, [])
