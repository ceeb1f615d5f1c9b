"""The async API: aenqueue, aget_result, async def tasks."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django.test import TransactionTestCase

from robust_queue.compat import TaskResultStatus
from testproject import tasks
from tests.helpers import work_off


class AsyncTests(TransactionTestCase):
    def test_aenqueue_and_aget_result_round_trip(self) -> None:
        async def scenario() -> tuple[str, str]:
            result = await tasks.async_add.aenqueue(2, 3)
            fetched = await tasks.async_add.aget_result(result.id)
            return result.id, fetched.status

        result_id, status = async_to_sync(scenario)()
        self.assertEqual(status, TaskResultStatus.READY)
        work_off()
        finished = tasks.async_add.get_result(result_id)
        self.assertEqual(finished.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(finished.return_value, 5)
