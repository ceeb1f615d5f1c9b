"""Server-rendered SVG bar charts: no script, no CDN, works offline."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone

from ..display import number
from .stats import Bucket

WIDTH = 720
HEIGHT = 160
LEFT = 64  # room for the y-axis labels ("1,000,000" at 13 px)
BOTTOM = 20  # room for the x-axis labels
LABELS = 6


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    width: float
    finished_y: float
    finished_height: float
    failed_y: float
    failed_height: float
    title: str


@dataclass(frozen=True, slots=True)
class Chart:
    """Stacked bars (finished below, failed above) for one period."""

    title: str
    bars: list[Bar]
    x_labels: list[tuple[float, str]]
    y_max: int
    y_max_shown: str = ""
    zone: str = ""
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    plot_bottom: int = HEIGHT - BOTTOM
    total_finished: str = "0"
    total_failed: str = "0"


def bar_chart(title: str, buckets: list[Bucket], label_format: str) -> Chart:
    """Bars labelled in the admin's current time zone, numbers grouped."""
    zone = timezone.get_current_timezone_name()
    plot_height = HEIGHT - BOTTOM - 10
    slot = (WIDTH - LEFT) / max(len(buckets), 1)
    y_max = _nice_max(max((b.finished + b.failed for b in buckets), default=0))
    scale = plot_height / y_max
    bars, labels = [], []
    every = max(len(buckets) // LABELS, 1)
    for index, bucket in enumerate(buckets):
        x = LEFT + index * slot
        at = f"{timezone.localtime(bucket.start):{label_format}}"
        finished_h = bucket.finished * scale
        failed_h = bucket.failed * scale
        base = HEIGHT - BOTTOM
        bars.append(
            Bar(
                x=round(x + slot * 0.1, 2),
                width=round(slot * 0.8, 2),
                finished_y=round(base - finished_h, 2),
                finished_height=round(finished_h, 2),
                failed_y=round(base - finished_h - failed_h, 2),
                failed_height=round(failed_h, 2),
                title=(
                    f"{at} ({zone}): {number(bucket.finished)} finished, "
                    f"{number(bucket.failed)} failed"
                ),
            )
        )
        if index % every == 0:
            labels.append((round(x + slot / 2, 2), at))
    return Chart(
        title=title,
        bars=bars,
        x_labels=labels,
        y_max=y_max,
        y_max_shown=number(y_max),
        zone=zone,
        total_finished=number(sum(b.finished for b in buckets)),
        total_failed=number(sum(b.failed for b in buckets)),
    )


def _nice_max(value: int) -> int:
    """The smallest 1, 2 or 5 x 10^n that is >= ``value`` (at least 1)."""
    magnitude = 1
    while True:
        for factor in (1, 2, 5):
            if factor * magnitude >= value:
                return factor * magnitude
        magnitude *= 10
