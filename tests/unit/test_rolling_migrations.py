"""A column added since 0021 never breaks the workers of the previous
release during a rolling deploy (docs/operations/upgrading.md): they insert
rows without it, so it is nullable or has a database default."""

from __future__ import annotations

from django.db import migrations, models
from django.db.migrations.loader import MigrationLoader
from django.test import SimpleTestCase

# The first migration that follows the rule (the upgrade page names the
# earlier ones that need the stop-everything path).
FIRST = 21


class RollingDeployTests(SimpleTestCase):
    def test_every_added_column_is_nullable_or_has_a_database_default(self) -> None:
        loader = MigrationLoader(None, ignore_no_migrations=True)
        checked = 0
        for (app, name), migration in loader.disk_migrations.items():
            if app != "robust_queue" or int(name[:4]) < FIRST:
                continue
            for operation in migration.operations:
                if not isinstance(operation, migrations.AddField):
                    continue
                field = operation.field
                with self.subTest(migration=name, field=operation.name):
                    checked += 1
                    self.assertTrue(
                        field.null or field.db_default is not models.NOT_PROVIDED,
                        f"{name} adds {operation.model_name}.{operation.name} NOT NULL "
                        "without db_default: the previous release's inserts fail",
                    )
        self.assertGreaterEqual(checked, 3)
