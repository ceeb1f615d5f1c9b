"""Enqueue and claim on databases that lack a feature: ids returned from a
bulk insert (MySQL), SELECT ... FOR UPDATE SKIP LOCKED (old MariaDB/MySQL)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from unittest import mock, skipIf

from django.db import NotSupportedError, connection
from django.test import TestCase
from django.utils import timezone

import robust_queue
from robust_queue.models import ClaimedExecution, Job, ReadyExecution, ScheduledExecution
from robust_queue.running.performing import perform
from testproject import tasks
from tests.helpers import claim


class BulkInsertWithoutReturnedIdsTests(TestCase):
    def test_jobs_find_their_ids_by_result_id(self) -> None:
        """MySQL (not MariaDB) returns no ids from a bulk INSERT: Django then
        leaves ``pk`` unset, and enqueue_all looks the jobs up before making
        their executions."""
        later = tasks.add.using(run_after=timezone.now() + timedelta(hours=1))
        with without_returned_ids():
            results = robust_queue.enqueue_all(
                [(tasks.add, (1, 2), {}), (later, (3, 4), {}), (tasks.add, (5, 6), {})]
            )
        jobs = {job.result_id: job for job in Job.objects.with_executions()}
        self.assertEqual(len(jobs), 3)
        states = [jobs[result.id].state for result in results]
        self.assertEqual([state.value for state in states], ["ready", "scheduled", "ready"])
        self.assertEqual(ReadyExecution.objects.count(), 2)
        self.assertEqual(ScheduledExecution.objects.count(), 1)

    def test_claims_find_their_ids_and_finish(self) -> None:
        """Without returned ids a claim still knows its row, so finishing
        it deletes that row (a claim without an id would never finish)."""
        first, second = tasks.add.enqueue(1, 2), tasks.add.enqueue(3, 4)
        with without_returned_ids():
            claimed = claim()
        stored = dict(ClaimedExecution.objects.values_list("job__result_id", "pk"))
        self.assertEqual({row.job.result_id: row.pk for row in claimed}, stored)
        self.assertEqual(set(stored), {first.id, second.id})
        with without_returned_ids():
            for row in claimed:
                self.assertIs(perform(row), True)
        self.assertFalse(ClaimedExecution.objects.exists())
        self.assertEqual(tasks.add.get_result(second.id).return_value, 7)


def without_returned_ids() -> Any:
    # Django and Robust Queue then take MySQL's path on this database.
    return patch_feature("can_return_rows_from_bulk_insert", False)


def patch_feature(name: str, value: bool) -> Any:
    """Set a database feature flag for a test, however the backend defines
    it: a property is replaced on the class, anything else (a plain or cached
    attribute) on this connection's features."""
    features = connection.features
    if isinstance(getattr(type(features), name, None), property):
        return mock.patch.object(type(features), name, value)
    return mock.patch.object(features, name, value)


class WithoutSkipLockedTests(TestCase):
    @skipIf(connection.vendor == "postgresql", "PostgreSQL claims in one statement")
    def test_a_server_without_skip_locked_is_refused_by_name(self) -> None:
        """An old MariaDB/MySQL cannot claim safely: the error says why,
        and nothing is claimed."""
        tasks.add.enqueue(1, 2)
        with (
            patch_feature("has_select_for_update", True),
            patch_feature("has_select_for_update_skip_locked", False),
            self.assertRaisesMessage(NotSupportedError, "FOR UPDATE SKIP LOCKED"),
        ):
            claim()
        self.assertEqual(ReadyExecution.objects.count(), 1)
        self.assertFalse(ClaimedExecution.objects.exists())
