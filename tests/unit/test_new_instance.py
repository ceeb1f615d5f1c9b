"""``new_instance``: a model instance as ``Model(**values)`` makes it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.db.models.signals import post_init, pre_init
from django.test import SimpleTestCase

from robust_queue.models import Job
from robust_queue.models.instances import new_instance

VALUES: dict[str, Any] = {
    "task_path": "testproject.tasks.add",
    "queue_name": "default",
    "priority": 3,
    "backend_alias": "default",
    "arguments": {"args": [1, 2], "kwargs": {}},
    "concurrency_key": "",
    "run_after": None,
    "enqueued_at": datetime(2026, 11, 29, 8, 0, tzinfo=UTC),
}


def _columns(job: Job) -> dict[str, Any]:
    return {field.attname: getattr(job, field.attname) for field in Job._meta.concrete_fields}


class NewInstanceTests(SimpleTestCase):
    def test_it_is_the_instance_the_model_makes(self) -> None:
        made, usual = new_instance(Job, dict(VALUES)), Job(**VALUES)
        mine, theirs = _columns(made), _columns(usual)
        # A new result id each, of the same shape.
        self.assertNotEqual(mine.pop("result_id"), theirs.pop("result_id"))
        self.assertEqual(len(made.result_id), len(usual.result_id))
        self.assertEqual(mine, theirs)
        self.assertEqual(
            (made._state.adding, made._state.db), (usual._state.adding, usual._state.db)
        )
        self.assertIsNone(made.pk)
        self.assertEqual(made.pending_tags, ())

    def test_mutable_defaults_are_new_for_every_instance(self) -> None:
        first, second = new_instance(Job, dict(VALUES)), new_instance(Job, dict(VALUES))
        for name in ("worker_ids", "errors", "metadata"):
            self.assertIsNot(getattr(first, name), getattr(second, name))
        first.worker_ids.append("w1")
        self.assertEqual(second.worker_ids, [])
        self.assertIsNot(first._state, second._state)

    def test_given_values_win_over_defaults(self) -> None:
        job = new_instance(Job, {**VALUES, "result_id": "given", "metadata": {"a": 1}})
        self.assertEqual((job.result_id, job.metadata), ("given", {"a": 1}))

    def test_init_receivers_get_every_instance(self) -> None:
        seen: list[str] = []

        def before(sender: type, **kwargs: Any) -> None:
            seen.append("pre")

        def after(sender: type, instance: Job, **kwargs: Any) -> None:
            seen.append(instance.task_path)

        for signal, receiver in ((pre_init, before), (post_init, after)):
            signal.connect(receiver, sender=Job)
            try:
                new_instance(Job, dict(VALUES))
            finally:
                signal.disconnect(receiver, sender=Job)
        self.assertEqual(seen, ["pre", VALUES["task_path"]])

    def test_an_unknown_name_is_refused_as_the_model_refuses_it(self) -> None:
        with self.assertRaisesMessage(TypeError, "unexpected keyword arguments: 'no_such_field'"):
            new_instance(Job, {**VALUES, "no_such_field": 1})
