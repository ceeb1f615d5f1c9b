"""A running job's progress as the admin shows it: "420 / 1,000 — note"
beside a bar (``robust_queue.progress``; the job list's running tab and
the job page)."""

from __future__ import annotations

from django.utils.html import format_html

from ... import masking
from ...models import Job
from ...running.progress import Progress
from .. import display


def shown(job: Job) -> str:
    """The bar and figures of ``job``'s last written progress; "—" for none."""
    progress = Progress.from_stored(job.progress)
    if progress is None:
        return "—"
    figures = _number(progress.done)
    if progress.total is not None:
        figures = f"{figures} / {_number(progress.total)}"
    # A note is the task's own text: masked like every value shown.
    note = format_html(" — {}", masking.mask(progress.note)) if progress.note else ""
    fraction = progress.fraction
    if fraction is None:
        return format_html('<span class="rq-progress">{}{}</span>', figures, note)
    return format_html(
        '<span class="rq-progress" title="{}%"><progress max="1" value="{}"></progress> {}{}</span>',
        f"{fraction * 100:.0f}",
        f"{fraction:.4f}",
        figures,
        note,
    )


def _number(value: float) -> str:
    return display.number(int(value)) if float(value).is_integer() else f"{value:g}"
