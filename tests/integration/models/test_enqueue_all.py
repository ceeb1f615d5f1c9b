"""Bulk enqueue on databases that return no ids from a bulk insert."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

from django.db import connection
from django.test import TestCase
from django.utils import timezone

import robust_queue
from robust_queue.models import Job, ReadyExecution, ScheduledExecution
from testproject import tasks


class BulkInsertWithoutReturnedIdsTests(TestCase):
    def test_jobs_find_their_ids_by_result_id(self) -> None:
        """MySQL (not MariaDB) returns no ids from a bulk INSERT: Django then
        leaves ``pk`` unset, and enqueue_all looks the jobs up before making
        their executions."""
        later = tasks.add.using(run_after=timezone.now() + timedelta(hours=1))
        # A class attribute (a property on SQLite and MySQL) turned off.
        features = type(connection.features)
        with mock.patch.object(features, "can_return_rows_from_bulk_insert", False):
            results = robust_queue.enqueue_all(
                [(tasks.add, (1, 2), {}), (later, (3, 4), {}), (tasks.add, (5, 6), {})]
            )
        jobs = {job.result_id: job for job in Job.objects.with_executions()}
        self.assertEqual(len(jobs), 3)
        states = [jobs[result.id].state for result in results]
        self.assertEqual([state.value for state in states], ["ready", "scheduled", "ready"])
        self.assertEqual(ReadyExecution.objects.count(), 2)
        self.assertEqual(ScheduledExecution.objects.count(), 1)

