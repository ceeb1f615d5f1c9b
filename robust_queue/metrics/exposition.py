"""Prometheus' text exposition format (version 0.0.4), written by hand.

https://prometheus.io/docs/instrumenting/exposition_formats/ — one
``# HELP`` and ``# TYPE`` line per family, then one line per sample:
``name{label="value",...} number``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Labels = tuple[tuple[str, str], ...]


@dataclass(slots=True)
class Family:
    """One metric family: its name, type, help text and samples."""

    name: str
    kind: str  # "gauge", "counter" or "histogram"
    help: str
    samples: list[tuple[str, Labels, float]] = field(default_factory=list)

    def add(self, value: float, **labels: str) -> None:
        """A sample of this family's own name (gauges and counters)."""
        self.samples.append((self.name, tuple(labels.items()), value))

    def add_histogram(
        self,
        bounds: Sequence[float],
        counts: Sequence[int],
        total: float,
        **labels: str,
    ) -> None:
        """``_bucket`` samples (cumulative, ``+Inf`` last), ``_sum`` and
        ``_count``, from non-cumulative ``counts`` (one more than bounds)."""
        base = tuple(labels.items())
        running = 0
        for bound, count in zip([*bounds, math.inf], counts, strict=True):
            running += count
            le = (("le", format_number(bound)),)
            self.samples.append((f"{self.name}_bucket", base + le, running))
        self.samples.append((f"{self.name}_sum", base, total))
        self.samples.append((f"{self.name}_count", base, running))


def render(families: Iterable[Family]) -> str:
    """The exposition text of ``families``, ending in a newline."""
    lines: list[str] = []
    for family in families:
        lines.append(f"# HELP {family.name} {_escape_help(family.help)}")
        lines.append(f"# TYPE {family.name} {family.kind}")
        for name, labels, value in family.samples:
            lines.append(f"{name}{_labels(labels)} {format_number(value)}")
    return "\n".join(lines) + "\n"


def format_number(value: float) -> str:
    """Integers without a point, floats in full, infinities as ``+Inf``."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if float(value).is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


def _labels(labels: Labels) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{key}="{_escape_label(value)}"' for key, value in labels)
    return "{" + inner + "}"


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")
