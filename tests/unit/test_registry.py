"""The registry records tasks as declared (no database needed)."""

from __future__ import annotations

from django.test import SimpleTestCase

from robust_queue.compat import Task
from robust_queue.options import registry
from testproject import other_backend, tasks


class RegisterTests(SimpleTestCase):
    def test_using_copies_do_not_replace_the_declared_task(self) -> None:
        tasks.report.using(queue_name="elsewhere", priority=-5)
        declared = registry.declared("testproject.tasks.report")
        self.assertIs(declared, tasks.report)
        self.assertEqual((declared.queue_name, declared.priority), ("reports", 10))

    def test_a_new_function_under_the_same_path_replaces_the_old(self) -> None:
        """A re-imported module declares new functions; the newest wins."""

        def shout(text: str) -> str:
            return text

        shout.__module__, shout.__qualname__ = other_backend.__name__, "shout"
        self.addCleanup(registry._DECLARED.pop, "testproject.other_backend.shout", None)
        old, new = tasks.add.using(), tasks.add.using()
        object.__setattr__(old, "func", other_backend.shout)
        object.__setattr__(new, "func", shout)
        registry.register(old)
        registry.register(new)
        self.assertIs(registry.declared("testproject.other_backend.shout"), new)

    def test_a_plain_task_for_a_robust_queue_alias_is_not_recorded(self) -> None:
        """Only the backend's task class is a declaration (a .using() copy
        of another backend's task is a plain Task)."""
        Task(
            priority=0,
            func=other_backend.shout,
            backend="default",
            queue_name="default",
            run_after=None,
        )
        self.assertIsNone(registry.declared("testproject.other_backend.shout"))


class RebuildTests(SimpleTestCase):
    """A worker rebuilds each job's task: the declaration itself when the
    job was enqueued as declared, a copy with the job's own values else."""

    def _row(self, **values: object) -> object:
        fields = {
            "task_path": "testproject.tasks.report",
            "backend_alias": "default",
            "queue_name": "reports",
            "priority": 10,
            "run_after": None,
            **values,
        }
        return type("Row", (), fields)()

    def test_a_job_enqueued_as_declared_runs_the_declaration(self) -> None:
        self.assertIs(registry.rebuild_task(self._row()), tasks.report)

    def test_a_job_enqueued_with_its_own_values_gets_them(self) -> None:
        from datetime import UTC, datetime

        when = datetime(2026, 11, 29, tzinfo=UTC)
        for values in ({"queue_name": "default"}, {"priority": -3}, {"run_after": when}):
            with self.subTest(values):
                task = registry.rebuild_task(self._row(**values))
                self.assertIsNot(task, tasks.report)
                self.assertIs(task.func, tasks.report.func)
                for name, value in values.items():
                    self.assertEqual(getattr(task, name), value)
