"""Prometheus' text format, written by hand."""

from __future__ import annotations

import math

from django.test import SimpleTestCase

from robust_queue.metrics.exposition import Family, format_number, render


class ExpositionTests(SimpleTestCase):
    def test_a_gauge_family_renders_help_type_and_samples(self) -> None:
        family = Family("rq_jobs", "gauge", "Jobs.\nTwo lines \\ here.")
        family.add(3, queue="default", state="ready")
        self.assertEqual(
            render([family]),
            "# HELP rq_jobs Jobs.\\nTwo lines \\\\ here.\n"
            "# TYPE rq_jobs gauge\n"
            'rq_jobs{queue="default",state="ready"} 3\n',
        )

    def test_label_values_are_escaped(self) -> None:
        family = Family("m", "gauge", "h")
        family.add(1, queue='a"b\\c\nd')
        self.assertIn('m{queue="a\\"b\\\\c\\nd"} 1', render([family]))

    def test_a_histogram_is_cumulative_with_inf_sum_and_count(self) -> None:
        family = Family("rq_wait_seconds", "histogram", "Wait.")
        family.add_histogram([0.1, 1.0], [2, 0, 3], 7.5, queue="q")
        self.assertEqual(
            render([family]).splitlines()[2:],
            [
                'rq_wait_seconds_bucket{queue="q",le="0.1"} 2',
                'rq_wait_seconds_bucket{queue="q",le="1"} 2',
                'rq_wait_seconds_bucket{queue="q",le="+Inf"} 5',
                'rq_wait_seconds_sum{queue="q"} 7.5',
                'rq_wait_seconds_count{queue="q"} 5',
            ],
        )

    def test_numbers(self) -> None:
        self.assertEqual(format_number(3.0), "3")
        self.assertEqual(format_number(0.25), "0.25")
        self.assertEqual(format_number(math.inf), "+Inf")
        self.assertEqual(format_number(math.nan), "NaN")
