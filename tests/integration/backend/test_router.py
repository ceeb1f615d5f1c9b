"""The shipped router sends the queue's models to the queue database."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import SimpleTestCase, override_settings

from robust_queue.models import Job, ReadyExecution
from robust_queue.router import RobustQueueRouter


@override_settings(ROBUST_QUEUE={"database": "queue"})
class RouterTests(SimpleTestCase):
    def setUp(self) -> None:
        self.router = RobustQueueRouter()

    def test_queue_models_read_and_write_the_queue_database(self) -> None:
        for model in (Job, ReadyExecution):
            with self.subTest(model=model.__name__):
                self.assertEqual(self.router.db_for_read(model), "queue")
                self.assertEqual(self.router.db_for_write(model), "queue")

    def test_other_models_are_left_to_other_routers(self) -> None:
        self.assertIsNone(self.router.db_for_read(User))
        self.assertIsNone(self.router.allow_migrate("default", "auth"))

    def test_queue_tables_migrate_only_on_the_queue_database(self) -> None:
        self.assertIs(self.router.allow_migrate("queue", "robust_queue"), True)
        self.assertIs(self.router.allow_migrate("default", "robust_queue"), False)

    @override_settings(
        ROBUST_QUEUE={},
        TASKS={
            "default": {
                "BACKEND": "robust_queue.backend.RobustQueueBackend",
                "OPTIONS": {"database": "queue"},
            }
        },
    )
    def test_database_defaults_to_the_backend_option(self) -> None:
        self.assertEqual(self.router.db_for_write(Job), "queue")
