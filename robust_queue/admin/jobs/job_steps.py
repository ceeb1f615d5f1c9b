"""A job's resumable steps as its page shows them: the finished steps in
order, and the step it stopped in with its last checkpoint
(``robust_queue.steps``, ``Job.steps``)."""

from __future__ import annotations

import json
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from ... import masking
from ...models import Job

# A cursor is short by design; a long one is cut for the page.
CURSOR_MAX_CHARS = 200


def shown(job: Job) -> SafeString | None:
    """The steps ``job`` recorded; None for a job without any. A value
    that is not what steps write (a hand-edited column) is shown as is."""
    stored = job.steps
    if stored is None:
        return None
    done = stored.get("done") if isinstance(stored, dict) else None
    if not (isinstance(done, list) and all(isinstance(name, str) for name in done)):
        return format_html("<code>{}</code>", _text(stored))
    finished = format_html_join(", ", "<code>{}</code>", ((name,) for name in done)) or "—"
    step = stored.get("step")
    if not isinstance(step, str):
        return format_html("Done: {}", finished)
    return format_html(
        'Done: {}; stopped in <code>{}</code> at <code id="rq-job-checkpoint">{}</code>',
        finished,
        step,
        _text(stored.get("cursor")),
    )


def _text(value: Any) -> str:
    # A checkpoint is the task's own value: masked like every value shown.
    text = json.dumps(masking.mask(value), default=str)
    return text if len(text) <= CURSOR_MAX_CHARS else f"{text[:CURSOR_MAX_CHARS]}…"
