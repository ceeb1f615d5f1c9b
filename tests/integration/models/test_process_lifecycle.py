"""A process's life on its row: register, heartbeat, deregister, and the
crash recovery that follows its death — prune, fail its claims, adopt —
run in this process against the real database."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

from django.test import TestCase
from django.utils import timezone

from robust_queue.compat import TaskResultStatus
from robust_queue.models import ClaimedExecution, Job, Process, ProcessKind, ReadyExecution
from robust_queue.models.process import OUTCOME_NOT_RECORDED, ProcessQuerySet
from robust_queue.processes.maintenance import (
    FaultLog,
    OrphanSweep,
    fail_orphaned_claims,
    prune_processes,
)
from testproject import control_tasks, tasks
from tests.helpers import WORKER_ID, claim

HOUR_AGO = timedelta(hours=1)


def register(
    name: str,
    *,
    pid: int = 100,
    kind: str = ProcessKind.WORKER,
    supervisor: Process | None = None,
    hostname: str = "host-a",
) -> Process:
    return Process.objects.register(
        kind=kind, name=name, pid=pid, hostname=hostname, supervisor=supervisor
    )


def silence(process: Process, for_: timedelta = HOUR_AGO) -> None:
    """Make the process's last heartbeat ``for_`` old."""
    Process.objects.filter(pk=process.pk).update(last_heartbeat_at=timezone.now() - for_)


def claimed_by(process: Process, count: int = 1) -> list[str]:
    """Enqueue ``count`` jobs and claim them for ``process``; their ids."""
    results = [tasks.add.enqueue(i, 1) for i in range(count)]
    claim(count, process=process)
    return [result.id for result in results]


def errors_of(result_id: str) -> list[tuple[str, str]]:
    result = tasks.add.get_result(result_id)
    return [(e.exception_class_path, e.traceback) for e in result.errors]


class RegistrationTests(TestCase):
    def test_a_registered_process_beats_until_it_deregisters(self) -> None:
        """heartbeat() moves the row's time forward; after deregister() the
        row is gone and heartbeat() says so."""
        process = register("w")
        silence(process)
        self.assertIs(process.heartbeat(), True)
        self.assertFalse(Process.objects.stale(60).exists())
        process.deregister()
        self.assertFalse(Process.objects.filter(pk=process.pk).exists())
        self.assertIs(process.heartbeat(), False)

    def test_deregistering_a_supervisor_keeps_its_children_and_claims(self) -> None:
        """The children's rows stay, unsupervised; no claim is touched."""
        supervisor = register("s", kind=ProcessKind.SUPERVISOR)
        worker = register("w", supervisor=supervisor)
        [result_id] = claimed_by(worker)
        supervisor.deregister()
        worker.refresh_from_db()
        self.assertIsNone(worker.supervisor_id)
        claims = worker.claimed_executions.values_list("job__result_id", flat=True)
        self.assertEqual(list(claims), [result_id])


class PruneTests(TestCase):
    def test_a_stale_process_is_pruned_and_its_claims_fail(self) -> None:
        """Its row goes; each claim fails with ProcessPrunedError naming it;
        a live process and its claims stay."""
        dead, alive = register("dead-worker", pid=4321), register("alive-worker")
        dead_jobs, alive_jobs = claimed_by(dead, 2), claimed_by(alive)
        silence(dead)
        self.assertEqual(len(Process.objects.prune(60)), 1)
        self.assertEqual(list(Process.objects.values_list("name", flat=True)), ["alive-worker"])
        for result_id in dead_jobs:
            self.assertEqual(tasks.add.get_result(result_id).status, TaskResultStatus.FAILED)
            [(path, trace)] = errors_of(result_id)
            self.assertEqual(path, "robust_queue.exceptions.ProcessPrunedError")
            self.assertIn("dead-worker (pid 4321 on host-a) stopped heartbeating", trace)
            self.assertIn(OUTCOME_NOT_RECORDED, trace)
        self.assertEqual(tasks.add.get_result(alive_jobs[0]).status, TaskResultStatus.RUNNING)
        self.assertEqual(ClaimedExecution.objects.get().process_id, alive.pk)

    def test_a_process_that_beats_before_its_row_is_deleted_is_kept(self) -> None:
        """It was stale when listed, then beat: it stays, with its claims."""
        process = register("w")
        [result_id] = claimed_by(process)
        silence(process)
        [listed] = Process.objects.stale(60)
        self.assertIs(process.heartbeat(), True)
        self.assertIs(listed.prune(60), False)
        self.assertTrue(Process.objects.filter(pk=process.pk).exists())
        self.assertEqual(tasks.add.get_result(result_id).status, TaskResultStatus.RUNNING)

    def test_the_pruner_keeps_itself(self) -> None:
        """The supervisor never prunes its own row, however stale."""
        supervisor = register("s", kind=ProcessKind.SUPERVISOR)
        silence(supervisor)
        self.assertEqual(len(Process.objects.prune(60, keep=supervisor.pk)), 0)
        self.assertEqual(len(Process.objects.prune(60)), 1)

    def test_the_supervisor_prunes_through_the_process_verb(self) -> None:
        """One path: ``prune_processes`` (the supervisor's upkeep) is
        ``Process.objects.prune`` with its fault guard, so the tests of the
        verb test what production runs."""
        supervisor = register("s", kind=ProcessKind.SUPERVISOR)
        worker = register("w")
        silence(supervisor)
        silence(worker)
        with mock.patch.object(
            ProcessQuerySet, "prune", autospec=True, side_effect=ProcessQuerySet.prune
        ) as verb:
            pruned = prune_processes("default", 60, supervisor.pk, FaultLog())
        self.assertEqual(pruned, [worker])
        verb.assert_called_once()

    def test_a_row_that_cannot_be_pruned_does_not_hold_up_the_others(self) -> None:
        """The guard skips it (the supervisor's logs it once) and the
        rest are pruned."""
        broken, fine = register("broken"), register("fine")
        silence(broken)
        silence(fine)
        real = Process.prune

        def prune(process: Process, threshold: float) -> bool:
            if process.pk == broken.pk:
                raise ValueError("a hand-edited row")
            return real(process, threshold)

        with (
            mock.patch.object(Process, "prune", prune),
            self.assertLogs("robust_queue.processes.maintenance", "ERROR") as logs,
        ):
            pruned = Process.objects.prune(60, guard=FaultLog().run)
        self.assertEqual(pruned, [fine])
        self.assertIn(f"Pruning {broken} (row {broken.pk}", logs.output[0])
        self.assertTrue(Process.objects.filter(pk=broken.pk).exists())

    def test_a_process_younger_than_the_threshold_is_kept(self) -> None:
        process = register("w")
        silence(process, timedelta(seconds=30))
        self.assertEqual(len(Process.objects.prune(60)), 0)
        self.assertEqual(len(Process.objects.prune(10)), 1)

    def test_a_pruned_claim_is_retried_when_its_policy_allows(self) -> None:
        """A crash is a failure like any other: the retry policy applies."""
        process = register("w")
        result = control_tasks.crashes_once.enqueue("k")
        claim(process=process)
        silence(process)
        Process.objects.prune(60)
        job = Job.objects.get(result_id=result.id)
        self.assertTrue(ReadyExecution.objects.filter(job=job).exists())
        [error] = job.errors
        self.assertEqual(
            error["exception_class_path"], "robust_queue.exceptions.ProcessPrunedError"
        )

    def test_pruning_a_supervisor_leaves_its_live_children(self) -> None:
        """Its children are unsupervised, not pruned with it."""
        supervisor = register("s", kind=ProcessKind.SUPERVISOR)
        worker = register("w", supervisor=supervisor)
        silence(supervisor)
        Process.objects.prune(60)
        worker.refresh_from_db()
        self.assertIsNone(worker.supervisor_id)


class ExitedChildTests(TestCase):
    def setUp(self) -> None:
        self.supervisor = register("s", kind=ProcessKind.SUPERVISOR, pid=1)

    def test_the_claims_of_an_exited_child_fail_and_its_row_goes(self) -> None:
        """ProcessExitError names the child and why it ended; its sibling
        and the sibling's claims stay."""
        child = register("w-1", pid=200, supervisor=self.supervisor)
        sibling = register("w-2", pid=201, supervisor=self.supervisor)
        [result_id] = claimed_by(child)
        claimed_by(sibling)
        rows = self.supervisor.supervisees_with_pid(200)
        self.assertEqual(rows.fail_all_claims("was killed by signal SIGKILL"), 1)
        [(path, trace)] = errors_of(result_id)
        self.assertEqual(path, "robust_queue.exceptions.ProcessExitError")
        self.assertIn(f"w-1 (pid 200) was killed by signal SIGKILL. {OUTCOME_NOT_RECORDED}", trace)
        self.assertEqual(list(Process.objects.filter(supervisor=self.supervisor)), [sibling])
        self.assertEqual(ClaimedExecution.objects.get().process_id, sibling.pk)

    def test_a_child_of_another_supervisor_with_the_same_pid_is_not_touched(self) -> None:
        other = register("s2", kind=ProcessKind.SUPERVISOR, pid=2, hostname="host-b")
        theirs = register("w", pid=400, supervisor=other)
        claimed_by(theirs)
        self.assertEqual(self.supervisor.supervisees_with_pid(400).fail_all_claims("exited"), 0)
        self.assertTrue(Process.objects.filter(pk=theirs.pk).exists())
        self.assertEqual(ClaimedExecution.objects.count(), 1)

    def test_failing_twice_fails_each_claim_once(self) -> None:
        """A record run again after a partial failure changes nothing."""
        child = register("w", pid=500, supervisor=self.supervisor)
        [result_id] = claimed_by(child)
        self.assertEqual(child.fail_claims("exited"), 1)
        self.assertEqual(child.fail_claims("exited"), 0)
        self.assertEqual(len(errors_of(result_id)), 1)


class AdoptTests(TestCase):
    def test_a_re_registered_supervisor_adopts_its_unsupervised_children(self) -> None:
        """By pid on its own host (forked children) or by row (threads);
        never another host's pid, nor a child that has a supervisor."""
        supervisor = register("s", kind=ProcessKind.SUPERVISOR, pid=1)
        forked = register("forked", pid=10)
        thread = register("thread", pid=1, hostname="host-a")
        elsewhere = register("elsewhere", pid=10, hostname="host-b")
        other = register("other-s", kind=ProcessKind.SUPERVISOR, pid=2)
        supervised = register("supervised", pid=10, supervisor=other)
        self.assertEqual(supervisor.adopt(pids=[10], pks=[thread.pk]), 2)
        self.assertEqual(
            sorted(supervisor.supervisees.values_list("name", flat=True)), ["forked", "thread"]
        )
        for row in (elsewhere, supervised):
            before = row.supervisor_id
            row.refresh_from_db()
            self.assertEqual(row.supervisor_id, before)
        self.assertIsNone(Process.objects.get(pk=supervisor.pk).supervisor_id)
        self.assertEqual(forked.pk, supervisor.supervisees_with_pid(10).get().pk)


class OrphanTests(TestCase):
    def test_claims_without_a_process_row_fail_as_missing(self) -> None:
        """The error names the worker that claimed the job (its row is
        gone) and says the body may have run unrecorded."""
        process = register("w")
        [result_id] = claimed_by(process)
        Process.objects.filter(pk=process.pk).delete()
        self.assertEqual(fail_orphaned_claims("default"), 1)
        [(path, trace)] = errors_of(result_id)
        self.assertEqual(path, "robust_queue.exceptions.ProcessMissingError")
        self.assertIn(
            f"The process that claimed this job ({WORKER_ID}) is gone: it is no longer "
            f"registered and never recorded the job's outcome. {OUTCOME_NOT_RECORDED}",
            trace,
        )

    def test_a_malformed_worker_ids_column_still_fails_the_claim(self) -> None:
        process = register("w")
        [result_id] = claimed_by(process)
        Job.objects.filter(result_id=result_id).update(worker_ids={"not": "a list"})
        Process.objects.filter(pk=process.pk).delete()
        self.assertEqual(fail_orphaned_claims("default"), 1)
        job = Job.objects.get(result_id=result_id)
        self.assertIn(
            "ProcessMissingError: The process that claimed this job is gone",
            job.errors[0]["traceback"],
        )

    def test_the_sweep_waits_for_an_orphan_to_settle(self) -> None:
        """A claim orphaned for less than ``settle`` s is left to its worker
        (it may still give it back); after that it is failed."""
        process = register("w")
        claimed_by(process)
        process.deregister()
        sweep = OrphanSweep("default", settle=3600)
        self.assertEqual(sweep.run(), 0)
        self.assertEqual(ClaimedExecution.objects.count(), 1)
        sweep.settle = 0
        self.assertEqual(sweep.run(), 1)
        self.assertFalse(ClaimedExecution.objects.exists())

    def test_a_live_process_claims_are_not_orphans(self) -> None:
        claimed_by(register("w"))
        self.assertEqual(OrphanSweep("default", settle=0).run(), 0)
