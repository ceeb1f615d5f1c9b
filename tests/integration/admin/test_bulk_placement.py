"""A large bulk operation goes where it runs next: the top priority on a
queue a live worker serves; the confirmation page, and the message after
it, say on which queue and behind how many jobs, or that no worker runs."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from unittest import mock

from django.contrib.messages import constants
from django.utils import timezone
from django.utils.html import escape

from robust_queue.admin.jobs import bulk, bulk_placement
from robust_queue.models import Job, Pause, Process, ReadyExecution
from testproject import tasks
from tests.helpers import claim, work_off
from tests.integration.admin.base import AdminTestCase, changelist

OPERATION = "robust_queue.admin.bulk_task.bulk_operation"


class BulkPlacementTests(AdminTestCase):
    def setUp(self) -> None:
        self.login()
        [tasks.fail.enqueue(f"n{i}") for i in range(3)]
        work_off()
        patcher = mock.patch.object(bulk, "BACKGROUND_ABOVE", 2)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.url = changelist(state="failed")
        self.data = {
            "action": "retry_selected",
            "_selected_action": [self.failed.pk],
            "index": 0,
            "select_across": 1,
        }

    def _workers(self, *selectors: str, threads: int = 3) -> None:
        """The one live worker (it holds the running job) polls ``selectors``."""
        metadata = {"queues": list(selectors), "threads": threads}
        Process.objects.filter(pk=self.process.pk).update(metadata=metadata)

    def _ready(self, count: int, queue: str = "default", priority: int = 0) -> None:
        for i in range(count):
            tasks.add.using(queue_name=queue, priority=priority).enqueue(i, i)

    def _ask(self, sentence: str) -> Any:
        """The confirmation page; it says ``sentence``."""
        page = self.client.post(self.url, self.data)
        self.assertEqual(page.context["placement"].sentence, sentence)
        self.assertContains(page, f'id="rq-bulk-when">{escape(sentence)}</p>', html=False)
        return page

    def _confirm(self, page: Any) -> tuple[Job, list[Any]]:
        confirmed = {**self.data, "confirm": "yes", "max_pk": page.context["max_pk"]}
        response = self.client.post(self.url, confirmed, follow=True)
        return Job.objects.get(task_path=OPERATION), list(response.context["messages"])

    def test_it_is_claimed_before_the_jobs_already_waiting(self) -> None:
        self._ready(40)
        self._ready(5, priority=50)
        page = self._ask("It runs next on queue 'default': 0 job(s) ahead of it.")
        operation, (message,) = self._confirm(page)
        self.assertEqual((operation.queue_name, operation.priority), ("default", 100))
        self.assertEqual(ReadyExecution.objects.get(job=operation).priority, 100)
        self.assertIn("It runs next on queue 'default': 0 job(s) ahead of it.", message.message)
        self.assertEqual(message.level, constants.SUCCESS)
        (first,) = claim(1)
        self.assertEqual(first.job_id, operation.pk)

    def test_top_priority_jobs_on_open_queues_are_ahead(self) -> None:
        self._ready(3, priority=100)
        self._ready(2, queue="reports", priority=100)
        self._ready(4, queue="mail", priority=100)
        Pause.objects.create(queue_name="mail")
        self._ask("It runs next on queue 'default': 5 job(s) ahead of it.")

    def test_a_worker_that_does_not_serve_default_gets_it(self) -> None:
        self._workers("reports", "mail")
        self._ready(20)
        operation, _ = self._confirm(
            self._ask("It runs next on queue 'reports': 0 job(s) ahead of it.")
        )
        self.assertEqual((operation.queue_name, operation.priority), ("reports", 100))

    def test_the_queue_with_fewest_jobs_ahead_in_the_workers_order(self) -> None:
        # This worker claims everything on "critical" before "default".
        self._workers("critical", "default")
        self._ready(4, queue="critical")
        self._ask("It runs next on queue 'critical': 0 job(s) ahead of it.")
        self._ready(1, queue="critical", priority=100)
        self._ready(3, queue="default", priority=100)
        self._ask("It runs next on queue 'critical': 1 job(s) ahead of it.")

    def test_a_prefix_selector_serves_its_prefix(self) -> None:
        self._workers("batch-*")
        self._ask("It runs next on queue 'batch-': 0 job(s) ahead of it.")
        self._ready(2, queue="batch-eu")
        self._ask("It runs next on queue 'batch-eu': 0 job(s) ahead of it.")

    def test_busy_workers_are_named(self) -> None:
        self._workers("*", threads=1)  # its one thread runs the job in ``slow``
        self._ask(
            "It runs next on queue 'default': 0 job(s) ahead of it. Every thread of the "
            "workers serving it is busy: it starts when one is free."
        )

    def test_a_paused_default_is_passed_over(self) -> None:
        Pause.objects.create(queue_name="default")
        self._ready(2, queue="reports")
        self._ask("It runs next on queue 'reports': 0 job(s) ahead of it.")

    def test_every_served_queue_paused(self) -> None:
        self._workers("reports")
        Pause.objects.create(queue_name="reports")
        self._ask("Queue 'reports' is paused: it will run first there when the queue is resumed.")

    def test_with_no_live_worker_the_page_says_so(self) -> None:
        stale = timezone.now() - timedelta(days=1)
        Process.objects.update(last_heartbeat_at=stale)
        sentence = (
            "No worker is running: it will run first on queue 'default' "
            "when one that serves it starts."
        )
        operation, (message,) = self._confirm(self._ask(sentence))
        self.assertEqual((operation.queue_name, operation.priority), ("default", 100))
        self.assertIn(sentence, message.message)
        self.assertEqual(message.level, constants.WARNING)

    def test_live_workers_that_serve_none_of_the_queues_it_may_use(self) -> None:
        self._workers("reports")
        where = bulk_placement.place("default", allowed={"default"})
        self.assertEqual((where.queue, where.ahead, where.live), ("default", None, True))
        self.assertEqual(
            where.sentence,
            "No running worker serves queue 'default': it will run first there when one starts.",
        )
