"""Unguessable public ids (result ids, batch ids).

A leaf: nothing here imports the rest of the package.
"""

from __future__ import annotations

import secrets


def opaque_id(nbytes: int) -> str:
    """``nbytes`` random bytes as url-safe text that never starts with "-".

    Operators paste these ids on command lines (``manage.py robust_queue
    cancel ID``), where a leading "-" reads as an option. Drawing again
    when one does keeps every allowed id equally likely.
    """
    while (value := secrets.token_urlsafe(nbytes)).startswith("-"):
        pass
    return value
