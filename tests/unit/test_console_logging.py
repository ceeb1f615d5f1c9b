"""Who decides where the supervisor's logs go: the project, or -v."""

from __future__ import annotations

import logging

from django.test import SimpleTestCase, override_settings

from robust_queue.processes import console


class ConsoleLoggingTests(SimpleTestCase):
    def setUp(self) -> None:
        logger = logging.getLogger("robust_queue")
        saved = (list(logger.handlers), logger.level, logger.propagate)
        root_handlers = list(logging.getLogger().handlers)
        # pytest's capture gives the root logger handlers; a bare project has none.
        logging.getLogger().handlers = []

        def restore() -> None:
            logger.handlers, logger.level, logger.propagate = saved[0], saved[1], saved[2]
            logging.getLogger().handlers = root_handlers

        self.addCleanup(restore)

    @override_settings(LOGGING={})
    def test_without_logging_verbosity_sets_the_level(self) -> None:
        for verbosity, level in (
            (0, logging.WARNING),
            (1, logging.INFO),
            (2, logging.DEBUG),
            (3, logging.DEBUG),
        ):
            with self.subTest(verbosity=verbosity):
                logging.getLogger("robust_queue").handlers = []
                self.assertIs(console.configure(verbosity), True)
                logger = logging.getLogger("robust_queue")
                self.assertEqual(logger.level, level)
                self.assertEqual(len(logger.handlers), 1)
                self.assertIs(logger.propagate, False)

    @override_settings(LOGGING={"version": 1, "loggers": {"robust_queue.jobs": {"level": "ERROR"}}})
    def test_a_project_logger_for_robust_queue_wins(self) -> None:
        self.assertIs(console.configure(3), False)

    @override_settings(LOGGING={"version": 1, "loggers": {"robust_queue_extra": {}}})
    def test_a_logger_that_only_shares_the_prefix_does_not_count(self) -> None:
        self.assertIs(console.project_configures_logging(), False)

    @override_settings(LOGGING={})
    def test_a_root_handler_wins(self) -> None:
        logging.getLogger().handlers = [logging.NullHandler()]
        self.assertIs(console.configure(1), False)
