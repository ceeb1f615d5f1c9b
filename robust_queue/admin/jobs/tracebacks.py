"""Tracebacks on the job page: the application's frames in sight, the
queue's own folded.

A traceback is cut into runs of frames; a run of frames of the queue
(``robust_queue/``, the Tasks framework, asyncio's and
concurrent.futures' internals) becomes one folded part, "N frames of the
queue", in its place: unfolded, the traceback reads complete and in order.
The text given is already masked; folding changes no character of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_FRAME = re.compile(r'(?P<indent>[ \t]*)File "(?P<path>[^"]*)", line \d+')
# Where the queue's frames come from (paths read with "/" separators).
QUEUE_PATHS = (
    "/robust_queue/",
    "/django/tasks/",
    "/django_tasks/",
    "/asyncio/",
    "/concurrent/futures/",
    "/asgiref/",
)


@dataclass(frozen=True, slots=True)
class Part:
    """Some lines of a traceback; ``frames`` > 0: that many frames of the
    queue, shown folded."""

    text: str
    frames: int = 0


def parts(traceback_text: str) -> list[Part]:
    """``traceback_text`` cut into parts (see the module docstring)."""
    runs: list[tuple[bool, list[str]]] = []  # (of the queue?, lines)
    frame_indent: int | None = None
    frames = 0
    for line in traceback_text.splitlines(keepends=True):
        match = _FRAME.match(line)
        if match:
            frame_indent = len(match["indent"])
            is_queue = _is_queue(match["path"])
            frames += is_queue
            _add(runs, is_queue, line)
        elif frame_indent is not None and _indent(line) > frame_indent and line.strip():
            runs[-1][1].append(line)  # the frame's code and its ^^^ marks
        else:
            frame_indent = None
            _add(runs, False, line)
    if not frames:
        return [Part(traceback_text)]
    return [
        Part("".join(lines), sum(1 for line in lines if _FRAME.match(line)) if queue else 0)
        for queue, lines in runs
    ]


def with_parts(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Error records with their traceback's ``parts``."""
    return [{**error, "parts": parts(error["traceback"])} for error in errors]


def _add(runs: list[tuple[bool, list[str]]], is_queue: bool, line: str) -> None:
    if runs and runs[-1][0] is is_queue:
        runs[-1][1].append(line)
    else:
        runs.append((is_queue, [line]))


def _is_queue(path: str) -> bool:
    path = path.replace("\\", "/")
    return any(part in path for part in QUEUE_PATHS)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))
