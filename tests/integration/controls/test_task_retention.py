"""Per-task retention: ``@retain`` and ``ROBUST_QUEUE["task_retention"]``
clear a task's jobs by its own cutoffs and keep them out of the global
pass."""

from __future__ import annotations

from datetime import timedelta

from django.test import TestCase, override_settings
from django.utils import timezone

from robust_queue.models import FailedExecution, Job, retention
from robust_queue.options.task_retention import TaskRetention
from testproject import coordination_tasks as co
from testproject import tasks
from tests.helpers import work_off

DAY = timedelta(days=1)


def _aged(result_id: str, age: timedelta) -> str:
    """Make the job of ``result_id`` look finished or failed ``age`` ago."""
    then = timezone.now() - age
    Job.objects.filter(result_id=result_id, finished_at__isnull=False).update(finished_at=then)
    FailedExecution.objects.filter(job__result_id=result_id).update(created_at=then)
    return result_id


def _remaining() -> set[str]:
    return set(Job.objects.values_list("result_id", flat=True))


class TaskRetentionTests(TestCase):
    def _run(self, *calls: tuple[object, tuple[object, ...], timedelta]) -> list[str]:
        ids = [task.enqueue(*args).id for task, args, _ in calls]  # type: ignore[attr-defined]
        work_off()
        return [_aged(result_id, age) for result_id, (_, _, age) in zip(ids, calls, strict=True)]

    def test_a_task_keeps_its_finished_jobs_longer_than_the_global_setting(self) -> None:
        """Global: 1 day. kept_a_month: 30 days."""
        plain, kept, expired = self._run(
            (tasks.add, (1, 1), 2 * DAY),
            (co.kept_a_month, (1,), 2 * DAY),
            (co.kept_a_month, (2,), 31 * DAY),
        )
        counts = retention.clear_expired("default")
        self.assertEqual(_remaining(), {kept})
        self.assertEqual(counts["finished"], 2)
        self.assertNotIn(plain, _remaining())
        self.assertNotIn(expired, _remaining())

    def test_a_task_clears_its_finished_jobs_sooner_and_keeps_its_failed_ones(self) -> None:
        """kept_an_hour: finished after an hour, failed never (the global
        setting clears failed jobs after a day)."""
        with override_settings(ROBUST_QUEUE={"clear_failed_jobs_after": DAY}):
            finished, failed, plain_failed = self._run(
                (co.kept_an_hour, (), timedelta(hours=2)),
                (co.kept_an_hour, (True,), 9 * DAY),
                (tasks.fail, (), 2 * DAY),
            )
            counts = retention.clear_expired("default")
        self.assertEqual(_remaining(), {failed})
        self.assertEqual((counts["finished"], counts["failed"]), (1, 1))
        self.assertNotIn(finished, _remaining())
        self.assertNotIn(plain_failed, _remaining())

    def test_settings_override_the_decorator_option_by_option(self) -> None:
        setting = {
            "task_retention": {
                "testproject.coordination_tasks.kept_a_month": {"finished": timedelta(days=3)},
                "testproject.tasks.add": {"finished": None},
            }
        }
        with override_settings(ROBUST_QUEUE=setting):
            kept_add, month_fresh, month_old = self._run(
                (tasks.add, (1, 1), 10 * DAY),
                (co.kept_a_month, (1,), 2 * DAY),
                (co.kept_a_month, (2,), 4 * DAY),
            )
            own = retention.task_retentions()
            retention.clear_expired("default")
        self.assertEqual(own["testproject.tasks.add"], TaskRetention(finished=None))
        self.assertEqual(_remaining(), {kept_add, month_fresh})

    def test_unfinished_jobs_are_never_cleared(self) -> None:
        running_like = co.kept_an_hour.using(run_after=timezone.now() + DAY).enqueue().id
        Job.objects.filter(result_id=running_like).update(enqueued_at=timezone.now() - 9 * DAY)
        retention.clear_expired("default")
        self.assertEqual(_remaining(), {running_like})
