"""The enqueue statement's own field adapters (models/sql/adapt.py) give
exactly what Django's ``get_db_prep_save`` gives, on this connection, for
every job field and the values an enqueue writes or a caller might pass."""

from __future__ import annotations

import datetime as dt
import warnings
from typing import Any

from django.db import connection
from django.db.models import JSONField, Value
from django.test import SimpleTestCase
from django.utils.translation import gettext_lazy

from robust_queue.models import Job
from robust_queue.models.sql.adapt import adapter

AWARE = dt.datetime(2026, 11, 27, 16, 5, 4, 123456, tzinfo=dt.UTC)
NAIVE = dt.datetime(2026, 11, 27, 16, 5, 4, 123456)

VALUES: dict[str, list[Any]] = {
    "CharField": [None, "", "tâche-ü", gettext_lazy("lazy"), 17],
    "SmallIntegerField": [0, -100, 100, "7", True],
    "PositiveIntegerField": [0, 3, "4"],
    "BooleanField": [False, True, 0, 1],
    "DateTimeField": [None, AWARE, AWARE.astimezone(dt.timezone(dt.timedelta(hours=5))), NAIVE],
    "JSONField": [
        None,
        {"args": [1, "ü", None], "kwargs": {"a": 1.5}},
        [],
        {},
        [[]],
        "text",
        0,
        True,
        Value(None, JSONField()),
    ],
}


def comparable(value: Any) -> Any:
    """psycopg wraps JSON (Jsonb) without equality: compare what it sends."""
    if hasattr(value, "obj") and hasattr(value, "dumps"):
        return (type(value), value.dumps(value.obj))
    return (type(value), value)


class AdapterTests(SimpleTestCase):
    databases = {"default"}

    def test_every_job_field_and_value_is_adapted_as_django_does(self) -> None:
        checked = 0
        for field in Job._meta.concrete_fields:
            if field.primary_key:
                continue
            adapt = adapter(field, connection)
            for value in VALUES[field.get_internal_type()]:
                with self.subTest(field=field.name, value=value), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # the naive datetime
                    expected = comparable(field.get_db_prep_save(value, connection))
                    self.assertEqual(comparable(adapt(value)), expected)
                    checked += 1
        self.assertGreater(checked, 60)
