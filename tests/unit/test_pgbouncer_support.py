"""The PgBouncer tests skip, saying why, on a machine without PgBouncer,
unless the run requires them (as scripts/test.sh does)."""

from __future__ import annotations

import os
import unittest
from unittest import mock

from django.test import SimpleTestCase

from tests.processes import pgbouncer


class PgBouncerBinaryTests(SimpleTestCase):
    def setUp(self) -> None:
        self.enterContext(mock.patch.object(pgbouncer.shutil, "which", return_value=None))
        self.enterContext(mock.patch.object(pgbouncer, "BINARY_PLACES", ()))
        self.enterContext(mock.patch.dict(os.environ))
        os.environ.pop("ROBUST_QUEUE_REQUIRE_PGBOUNCER", None)

    def test_without_the_binary_the_tests_skip_with_the_reason(self) -> None:
        with self.assertRaisesMessage(
            unittest.SkipTest, "the pgbouncer binary is missing: run scripts/system-deps.sh"
        ):
            pgbouncer.pgbouncer_or_skip()

    def test_a_run_that_requires_them_fails_instead(self) -> None:
        os.environ["ROBUST_QUEUE_REQUIRE_PGBOUNCER"] = "1"
        with self.assertRaisesMessage(
            RuntimeError, "PgBouncer tests required but the pgbouncer binary is missing"
        ):
            pgbouncer.pgbouncer_or_skip()
