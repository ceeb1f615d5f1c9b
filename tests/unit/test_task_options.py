"""Task options (concurrency limit, retry policy) live on the task itself."""

from __future__ import annotations

import inspect
import os
import pickle
import subprocess
import sys
from dataclasses import fields
from datetime import timedelta
from pathlib import Path

from django.test import SimpleTestCase

from robust_queue import exceptions, limits_concurrency, retry
from robust_queue.compat import Task, task
from robust_queue.exceptions import ConfigurationError, RobustQueueError
from robust_queue.options import registry
from robust_queue.options.concurrency import ConcurrencyLimit, limit_for
from robust_queue.options.retries import RetryPolicy, policy_for
from robust_queue.options.task import RobustQueueTask
from testproject import control_tasks as ct
from testproject import tasks

ROOT = Path(__file__).resolve().parents[2]


@retry(attempts=4, backoff="fixed", wait=timedelta(seconds=9))
@limits_concurrency(key="k", to=3)
@task()
def both(x: int) -> int:
    """Both decorators over one task."""
    return x


def undeclared(x: int) -> int:
    return x


def build(**options: object) -> RobustQueueTask:
    """A task of ``undeclared`` (Django 6.0's Task fields have no defaults)."""
    return RobustQueueTask(
        func=undeclared,
        priority=0,
        backend="default",
        queue_name="default",
        run_after=None,
        **options,
    )


class DecoratorTests(SimpleTestCase):
    def test_decorators_return_tasks_that_carry_their_options(self) -> None:
        self.assertIsInstance(both, RobustQueueTask)
        limit = limit_for(both)
        policy = policy_for(both)
        assert limit is not None and policy is not None
        self.assertEqual((limit.key, limit.to), ("k", 3))
        self.assertEqual((policy.attempts, policy.wait), (4, timedelta(seconds=9)))
        self.assertIs(both.limits_concurrency, limit)
        self.assertIs(both.retry, policy)

    def test_tasks_without_options_carry_none(self) -> None:
        self.assertIsNone(limit_for(tasks.add))
        self.assertIsNone(policy_for(tasks.add))
        self.assertIsNone(limit_for(None))

    def test_using_copies_keep_the_options(self) -> None:
        derived = both.using(priority=7, queue_name="other")
        self.assertEqual((derived.priority, derived.queue_name), (7, "other"))
        self.assertIs(derived.limits_concurrency, both.limits_concurrency)
        self.assertIs(derived.retry, both.retry)

    def test_the_registry_holds_the_decorated_declaration(self) -> None:
        """A worker resolving the path gets the options, not the bare @task."""
        for declared in (both, ct.limited, ct.flaky):
            with self.subTest(declared.module_path):
                resolved = registry.declared(declared.module_path)
                self.assertIs(resolved, declared)

    def test_a_using_copy_does_not_replace_the_declaration(self) -> None:
        both.using(priority=-5)
        self.assertIs(registry.declared(both.module_path), both)

    def test_the_dict_form_builds_the_same_value_objects(self) -> None:
        made = build(
            limits_concurrency={"key": "k", "to": 3},
            retry={"attempts": 4, "backoff": "fixed", "wait": timedelta(seconds=9)},
        )
        self.assertEqual(made.limits_concurrency, both.limits_concurrency)
        self.assertEqual(made.retry, both.retry)


class PickleAndForkTests(SimpleTestCase):
    def test_decorated_tasks_pickle_with_their_options(self) -> None:
        """Even with a lambda concurrency key, which pickle cannot carry."""
        for original in (both, ct.limited, ct.flaky, both.using(priority=9)):
            with self.subTest(original.module_path):
                copy = pickle.loads(pickle.dumps(original))
                self.assertIsInstance(copy, RobustQueueTask)
                self.assertEqual(copy, original)
                self.assertIs(copy.func, original.func)
                self.assertIs(copy.limits_concurrency, original.limits_concurrency)
                self.assertIs(copy.retry, original.retry)

    def test_a_forked_child_resolves_the_options(self) -> None:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                resolved = registry.resolve_task(ct.limited.module_path, "default")
                limit = limit_for(resolved)
                os.write(write, str(limit.to if limit else None).encode())
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read) as pipe:
            answer = pipe.read()
        os.waitpid(pid, 0)
        self.assertEqual(answer, "2")


class BadOptionTests(SimpleTestCase):
    def test_bad_options_are_clear_errors(self) -> None:
        cases = [
            ({"retry": "often"}, "@task(retry=...) takes a dict of retry() options"),
            ({"retry": {"attempts": 0}}, "'attempts' must be at least 1"),
            ({"retry": {"colour": 1}}, "unexpected keyword argument 'colour'"),
            ({"limits_concurrency": {"key": "k", "to": 0}}, "'to' must be an integer >= 1"),
            (
                {"limits_concurrency": ConcurrencyLimit(key="k", on_conflict="wait")},  # type: ignore[arg-type]
                "'on_conflict' must be 'block' or 'discard'",
            ),
            ({"retry": RetryPolicy(jitter=3)}, "'jitter' must be between 0 and 1"),
        ]
        for options, message in cases:
            with self.subTest(options), self.assertRaisesMessage(ConfigurationError, message):
                build(**options)

    def test_decorators_go_over_a_task(self) -> None:
        for decorator in (retry(), limits_concurrency("k")):
            with (
                self.subTest(decorator),
                self.assertRaisesMessage(
                    ConfigurationError, "must be stacked over @task, not applied to"
                ),
            ):
                decorator(undeclared)  # type: ignore[arg-type]

    def test_decorators_go_over_a_robust_queue_task(self) -> None:
        """A task of another backend is a plain Task: it has no options."""
        plain: Task = object.__new__(Task)
        values = {field.name: getattr(tasks.add, field.name) for field in fields(Task)}
        for name, value in {**values, "func": undeclared, "backend": "elsewhere"}.items():
            object.__setattr__(plain, name, value)
        for name, decorator in (
            ("retry", retry()),
            ("limits_concurrency", limits_concurrency("k")),
        ):
            with (
                self.subTest(name),
                self.assertRaisesMessage(
                    ConfigurationError,
                    f"@{name} must be stacked over @task for a Robust Queue backend: "
                    f"task {plain.module_path} runs on backend 'elsewhere'",
                ),
            ):
                decorator(plain)


class ExceptionTests(SimpleTestCase):
    def test_every_exception_derives_from_the_base(self) -> None:
        defined = [
            value
            for value in vars(exceptions).values()
            if inspect.isclass(value)
            and issubclass(value, BaseException)
            and value.__module__ == exceptions.__name__
        ]
        self.assertIn(exceptions.DeserializationError, defined)
        for error in defined:
            with self.subTest(error.__name__):
                self.assertTrue(issubclass(error, RobustQueueError))
                self.assertTrue(error.__doc__)


class LeafTests(SimpleTestCase):
    def test_policy_modules_import_no_models_and_no_registry(self) -> None:
        """concurrency, retries and task sit below the models."""
        code = (
            "import sys\n"
            "import robust_queue.options.concurrency, robust_queue.options.retries, robust_queue.options.task\n"
            "print(sorted(m for m in sys.modules if m.startswith('robust_queue.')))\n"
        )
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        loaded = set(eval(out))  # noqa: S307 - our own printed list
        self.assertEqual(
            loaded
            & {
                "robust_queue.models",
                "robust_queue.options.registry",
                "robust_queue.running.performing",
            },
            set(),
        )
