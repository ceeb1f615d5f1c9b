"""Unique keys in the admin: a job's key on its page, a key's job found.

A unique key (``@unique``, ``enqueue_once``) is stored as a SHA-256 hash
with a readable label (``UniqueKey``); its row names the job holding it.
A key is found by its label or its hash through the hash's unique index,
a job's key through the row's result id index (migration 0011). Labels are
built from arguments: they are masked like concurrency keys, and with
masking on a key that shows masked is never found by typing it.
"""

from __future__ import annotations

import hashlib
import re

from ...models import Job, UniqueKey
from ...options.unique_claims import LABEL_MAX_LENGTH
from .. import display
from ..masking import values as masking

_HASH = re.compile(r"[0-9a-f]{64}")


def find(value: str, using: str) -> UniqueKey | None:
    """The key whose label (as stored) or hash is ``value``."""
    if not value or len(value) > LABEL_MAX_LENGTH:
        return None
    lowered = value.lower()
    key_hash = lowered if _HASH.fullmatch(lowered) else _hash(value)
    return UniqueKey.objects.using(using).filter(key_hash=key_hash).first()


def holder(value: str, using: str) -> str | None:
    """The result id of the job holding the key ``value``; None if there
    is none, or (masking on) if that job shows the key masked."""
    key = find(value, using)
    if key is None:
        return None
    if masking.is_on():
        job = _job(key.result_id, using)
        if job is None or masking.shown_key(job, display.text(key.key)) != key.key:
            return None
    return key.result_id


def of_job(job: Job) -> tuple[str, bool] | None:
    """``job``'s unique key as shown, and whether it is shown unmasked;
    None if it holds none."""
    key = UniqueKey.objects.using(job._state.db).filter(result_id=job.result_id).first()
    if key is None:
        return None
    label = display.text(key.key)
    shown = masking.shown_key(job, label)
    return shown, shown == key.key


def _hash(label: str) -> str:
    # The label is the hashed text unless it was escaped or cut for display.
    return hashlib.sha256(label.encode("utf-8", "surrogatepass")).hexdigest()


def _job(result_id: str, using: str) -> Job | None:
    fields = ("task_path", "backend_alias", "arguments", "result_id")
    return Job.objects.using(using).only(*fields).filter(result_id=result_id).first()
