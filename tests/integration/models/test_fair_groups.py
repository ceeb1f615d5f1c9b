"""Fair groups: every path that makes a job ready gives it a round, and
workers take the groups' jobs round robin (models/fair_rounds.py)."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import robust_queue
from robust_queue.exceptions import ConfigurationError, EnqueueError
from robust_queue.models import (
    BlockedExecution,
    Job,
    ReadyExecution,
    ScheduledExecution,
    Semaphore,
)
from robust_queue.options import registry
from robust_queue.running.performing import perform
from testproject import control_tasks, tasks
from testproject import fair_tasks as ft
from tests.helpers import claim


def groups_in_claim_order(limit: int = 100) -> list[str | None]:
    """The groups of ready jobs, claimed one at a time (as idle threads do)."""
    order = []
    while claimed := claim(1, queue_name="tenants"):
        order.append(claimed[0].job.group_key)
        if len(order) >= limit:
            break
    return order


def ready_of(result_id: str) -> ReadyExecution:
    return ReadyExecution.objects.get(job__result_id=result_id)


class RoundTests(TestCase):
    def test_a_groups_jobs_take_successive_rounds_and_a_new_group_the_first(self) -> None:
        """A group with a backlog holds rounds 0..n-1; another group's new
        job takes the queue's first round, so it is claimed second."""
        big = [ft.tenant_job.enqueue("big", i) for i in range(5)]
        small = ft.tenant_job.enqueue("small")
        self.assertEqual([ready_of(r.id).fair_round for r in big], [0, 1, 2, 3, 4])
        self.assertEqual(ready_of(small.id).fair_round, 0)
        self.assertEqual(ready_of(small.id).group_key, "small")
        self.assertEqual(Job.objects.get(result_id=small.id).group_key, "small")
        self.assertEqual(groups_in_claim_order(2), ["big", "small"])

    def test_a_new_group_joins_at_the_queues_current_round(self) -> None:
        for i in range(6):
            ft.tenant_job.enqueue("big", i)
        claim(3, queue_name="tenants")  # rounds 0..2 run
        small = ft.tenant_job.enqueue("small")
        self.assertEqual(ready_of(small.id).fair_round, 3)
        self.assertEqual(groups_in_claim_order(2), ["big", "small"])

    def test_claims_go_round_robin_across_groups(self) -> None:
        for i in range(6):
            ft.tenant_job.enqueue("a", i)
        for i in range(3):
            ft.tenant_job.enqueue("b", i)
        ft.tenant_job.enqueue("c")
        self.assertEqual(
            groups_in_claim_order(),
            ["a", "b", "c", "a", "b", "a", "b", "a", "a", "a"],
        )

    def test_priority_still_comes_first(self) -> None:
        for i in range(3):
            ft.tenant_job.enqueue("big", i)
        urgent = ft.tenant_job.using(priority=10).enqueue("big")
        late = ft.tenant_job.using(priority=-10).enqueue("small")
        [first] = claim(1, queue_name="tenants")
        self.assertEqual(first.job.result_id, urgent.id)
        self.assertEqual(groups_in_claim_order()[-1], "small")
        self.assertEqual(Job.objects.get(result_id=late.id).group_key, "small")

    def test_an_ungrouped_queue_keeps_priority_then_fifo(self) -> None:
        ids = [ft.ungrouped_job.enqueue(i).id for i in range(4)]
        self.assertEqual(
            list(ReadyExecution.objects.values_list("fair_round", "group_key").distinct()),
            [(0, None)],
        )
        self.assertEqual([row.job.result_id for row in claim(10)], ids)

    def test_a_callable_key_that_gives_none_leaves_the_job_ungrouped(self) -> None:
        result = ft.tenant_job.enqueue(None)
        self.assertIsNone(Job.objects.get(result_id=result.id).group_key)
        self.assertEqual(ready_of(result.id).fair_round, 0)

    def test_a_scheduled_job_gets_its_round_when_it_becomes_due(self) -> None:
        later = ft.tenant_job.using(run_after=timezone.now() + timedelta(hours=1)).enqueue("s")
        for i in range(4):
            ft.tenant_job.enqueue("big", i)
        claim(2, queue_name="tenants")  # big's rounds 0 and 1 run
        ScheduledExecution.objects.update(scheduled_at=timezone.now() - timedelta(seconds=1))
        self.assertEqual(ScheduledExecution.objects.dispatch_next_batch(10), 1)
        self.assertEqual((ready_of(later.id).group_key, ready_of(later.id).fair_round), ("s", 2))

    def test_a_retried_job_gets_its_round_again(self) -> None:
        failing = ft.failing_tenant_job.enqueue()
        for i in range(3):
            ft.tenant_job.enqueue("big", i)
        [claimed] = claim(1, queue_name="tenants")
        self.assertEqual(claimed.job.result_id, failing.id)
        perform(claimed)
        retried = ready_of(failing.id)
        self.assertEqual((retried.group_key, retried.fair_round), ("retried", 0))
        # It keeps its job id: within round 0 it is older than big's.
        self.assertEqual(groups_in_claim_order(2), ["retried", "big"])

    def test_a_released_blocked_job_gets_its_round(self) -> None:
        """Over its group's cap a job waits blocked; released, it joins
        at the queue's current round, not behind its group's old rounds."""
        capped = [ft.capped_tenant_job.enqueue("x") for _ in range(3)]
        self.assertEqual(BlockedExecution.objects.get().job.result_id, capped[2].id)
        self.assertEqual(Job.objects.get(result_id=capped[0].id).concurrency_key, "fair:tenants/x")
        for i in range(5):
            ft.tenant_job.enqueue("big", i)
        claimed = [claim(1, queue_name="tenants")[0] for _ in range(3)]
        self.assertEqual([row.job.group_key for row in claimed], ["x", "big", "x"])
        perform(claimed[0])  # frees a slot of x: its blocked job is released
        released = ready_of(capped[2].id)
        self.assertEqual((released.group_key, released.fair_round), ("x", 1))
        # Round 1 is big's and x's; the older job goes first.
        self.assertEqual(groups_in_claim_order(2), ["x", "big"])

    def test_the_cap_is_per_queue_and_group(self) -> None:
        for _ in range(3):
            ft.capped_tenant_job.enqueue("x")
            ft.capped_tenant_job.enqueue("y")
            ft.capped_tenant_job.using(queue_name="other").enqueue("x")
        self.assertEqual(ReadyExecution.objects.count(), 6)
        self.assertEqual(BlockedExecution.objects.count(), 3)
        self.assertEqual(
            sorted(Semaphore.objects.values_list("key", "value")),
            [("fair:other/x", 0), ("fair:tenants/x", 0), ("fair:tenants/y", 0)],
        )


class GroupApiTests(TestCase):
    def test_job_group_sets_the_group_of_every_job_enqueued_inside(self) -> None:
        with robust_queue.job_group("acme"):
            plain = ft.ungrouped_job.enqueue()
            with robust_queue.job_group("inner"):
                inner = ft.tenant_job.enqueue("declared")
            declared = ft.tenant_job.enqueue("declared")
        outside = ft.ungrouped_job.enqueue()
        groups = dict(Job.objects.values_list("result_id", "group_key"))
        self.assertEqual(
            [groups[r.id] for r in (plain, inner, declared, outside)],
            ["acme", "inner", "acme", None],
        )

    def test_bad_group_names_are_refused_before_anything_is_written(self) -> None:
        for bad, shown in [("", "''"), (5, "5"), ("x" * 101, "'xxx"), ("a\nb", "'a\\nb'")]:
            with self.subTest(bad=bad):
                with self.assertRaisesMessage(ConfigurationError, f"job_group(): group {shown}"):
                    with robust_queue.job_group(bad):  # type: ignore[arg-type]
                        ft.ungrouped_job.enqueue()
        self.assertFalse(Job.objects.exists())

    def test_a_key_that_gives_a_bad_group_fails_the_enqueue_with_nothing_written(self) -> None:
        with self.assertRaisesMessage(EnqueueError, "group '' is not a string of 1 to 100"):
            ft.tenant_job.enqueue("")
        with self.assertRaisesMessage(EnqueueError, "could not be computed from its arguments"):
            ft.tenant_job.enqueue()  # type: ignore[call-arg]
        self.assertFalse(Job.objects.exists())

    def test_bad_declarations_are_refused(self) -> None:
        with self.assertRaisesMessage(ConfigurationError, "'cap' must be an integer >= 1"):
            robust_queue.fair_group("x", cap=0)
        with self.assertRaisesMessage(ConfigurationError, "'key' must be a string or a callable"):
            robust_queue.fair_group(5)  # type: ignore[arg-type]
        with self.assertRaisesMessage(ConfigurationError, "fair_group(): group ''"):
            robust_queue.fair_group("")

    def test_a_cap_and_a_concurrency_limit_are_refused_together(self) -> None:
        limited = control_tasks.limited
        with self.assertRaisesMessage(ConfigurationError, "@fair_group(cap=...) and @limits"):
            robust_queue.fair_group("x", cap=2)(limited)
        # Without a cap the two go together: groups only order the claims.
        grouped = robust_queue.fair_group("x")(limited)
        # The decorator declared it under limited's path: declare limited
        # again, for the tests that resolve it after this one.
        self.addCleanup(registry.register, limited)
        self.assertEqual(grouped.fair_group.key, "x")

    def test_a_concurrency_group_may_not_take_the_caps_prefix(self) -> None:
        with self.assertRaisesMessage(ConfigurationError, "must not start with 'rate:', 'dep:'"):
            robust_queue.limits_concurrency(key="k", group="fair:tenants")

    def test_the_keyword_declares_the_same_option(self) -> None:
        if not hasattr(ft, "grouped_by_keyword"):
            self.skipTest("this Django's @task takes no backend options")
        self.assertEqual(ft.grouped_by_keyword.fair_group.key, "by-keyword")
        self.assertEqual(ft.grouped_by_keyword.fair_group.cap, 3)

    def test_other_tasks_enqueue_as_before(self) -> None:
        """A job without a group takes the one-statement enqueue and
        writes no group (the fast path's INSERT does not name it)."""
        result = tasks.add.enqueue(1, 2)
        self.assertIsNone(Job.objects.get(result_id=result.id).group_key)
        self.assertEqual(ready_of(result.id).fair_round, 0)


class RoundReadPlanTests(TestCase):
    """The two reads that give a grouped job its round each read one end
    of an index: the group's last round, the queue's first."""

    @classmethod
    def setUpTestData(cls) -> None:
        for i in range(30):
            ft.tenant_job.enqueue(f"t{i % 3}", i)
            ft.ungrouped_job.enqueue(i)
        # Another queue's backlog, as on a real server: reading the
        # queue's first round off the index of all queues would step over
        # it. Without it, 60 rows left the plan to the planner's whim (CI
        # once chose rq_ready_poll_all with a filter on the queue).
        robust_queue.enqueue_all([(tasks.add, (i, 0), {}) for i in range(3000)])
        if connection.vendor in ("postgresql", "sqlite"):
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE robust_queue_ready_execution")

    def test_each_read_uses_its_index(self) -> None:
        with CaptureQueriesContext(connection) as queries:
            ft.tenant_job.enqueue("t1")
        reads = [q["sql"] for q in queries.captured_queries if "fair_round" in q["sql"]]
        [first] = [sql for sql in reads if "MIN(" in sql.upper()]
        [last] = [sql for sql in reads if "MAX(" in sql.upper()]
        for sql, index in [(first, "rq_ready_poll_queue"), (last, "rq_ready_group_round")]:
            plan = self._plan(sql)
            # MySQL/MariaDB read a MIN or MAX off the index's end while
            # planning ("Select tables optimized away").
            if "Select tables optimized away" not in plan:
                self.assertIn(index, plan)

    def _plan(self, sql: str) -> str:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                # As on a big table, where no scan of the whole of it wins.
                cursor.execute("SET LOCAL enable_seqscan = off")
                cursor.execute(f"EXPLAIN {sql}")
                return "\n".join(row[0] for row in cursor.fetchall())
            if connection.vendor == "sqlite":
                cursor.execute(f"EXPLAIN QUERY PLAN {sql}")
                return "\n".join(row[-1] for row in cursor.fetchall())
            cursor.execute(f"EXPLAIN FORMAT=JSON {sql}")
            return str(cursor.fetchone()[0])
