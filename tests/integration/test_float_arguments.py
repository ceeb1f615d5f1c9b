"""Float arguments come back exactly from every database's JSON column.

PostgreSQL's ``jsonb`` stores numbers as ``numeric``: ``-0.0`` would come
back as ``0`` and ``1e308`` as an int. Such floats are stored tagged.
"""

from __future__ import annotations

import math

from django.test import TestCase

from robust_queue.arguments import decode_arguments
from robust_queue.models import Job
from testproject import tasks

FLOATS = (-0.0, 0.0, 1e308, -1e308, 1e16, 1.5, 0.1, 1e-7, 5e-324, 2.0**53, 1.7976931348623157e308)


class FloatArgumentTests(TestCase):
    def test_floats_round_trip_exactly_through_the_database(self) -> None:
        result = tasks.add.enqueue(list(FLOATS), {"x": -0.0})
        job = Job.objects.get(result_id=result.id)
        args, _ = decode_arguments(job.arguments)
        [values, mapping] = args
        for sent, stored in zip(FLOATS, values, strict=True):
            with self.subTest(sent=sent):
                self.assertIs(type(stored), float)
                self.assertEqual(stored, sent)
                self.assertEqual(math.copysign(1, stored), math.copysign(1, sent))
        self.assertEqual(math.copysign(1, mapping["x"]), -1)

    def test_plain_floats_stay_plain_json(self) -> None:
        result = tasks.add.enqueue(1.5, 0.1)
        self.assertEqual(Job.objects.get(result_id=result.id).arguments["args"], [1.5, 0.1])
