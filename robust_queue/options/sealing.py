"""Sealing values with ``ROBUST_QUEUE["encryption_keys"]`` (Fernet).

A sealed value is stored as ``{"__rq__": "encrypted", "v": <token>}``:
the Fernet token of the value's JSON. The keys are tried newest first
(``MultiFernet``): the first encrypts, every one decrypts, so a key is
rotated in by putting the new one first and out once no row needs it.

``cryptography`` is an optional dependency (the ``encrypted`` extra): it
is imported only when a value is sealed or opened, so a project without
``@encrypted`` tasks never loads it. Nothing here prints a key.
"""

from __future__ import annotations

import base64
import binascii
import json
from functools import lru_cache
from typing import Any

from .. import conf
from ..arguments import TAG
from ..exceptions import EncryptionError

SEALED = "encrypted"
SETTING = 'ROBUST_QUEUE["encryption_keys"]'
INSTALL = "pip install 'robust-queue[encrypted]'"
FERNET_KEY = "32 url-safe base64-encoded bytes, as Fernet.generate_key() makes"


def is_sealed(value: Any) -> bool:
    """Whether ``value`` is a sealed value (the stored form)."""
    return isinstance(value, dict) and value.get(TAG) == SEALED


def seal(value: Any, what: str) -> dict[str, str]:
    """``value`` (plain JSON) sealed with the newest key; ``what`` names it
    in the ``EncryptionError`` raised when it cannot be (no keys, a bad
    key, no cryptography package)."""
    text = json.dumps(value, separators=(",", ":"))
    token = _fernet(f"Cannot encrypt {what}").encrypt(text.encode("ascii"))
    return {TAG: SEALED, "v": token.decode("ascii")}


def unseal(value: Any, what: str) -> Any:
    """The plain JSON that ``value`` (a sealed value) holds.

    Raises ``EncryptionError`` naming ``what`` when no key opens it: the
    keys are missing or wrong, or the token was altered.
    """
    token = value.get("v") if is_sealed(value) else None
    if not isinstance(token, str):
        raise EncryptionError(f"Cannot decrypt {what}: the stored value is not a token.")
    fernet = _fernet(f"Cannot decrypt {what}")
    # _fernet() imported it: an optional extra, never imported at the top.
    from cryptography.fernet import InvalidToken  # noqa: PLC0415

    try:
        text = fernet.decrypt(token.encode("ascii", "replace"))
    except InvalidToken as exc:
        raise EncryptionError(
            f"Cannot decrypt {what} with any of the {_count()} key(s) in {SETTING}: "
            "the key that encrypted it is not among them, or the value was altered."
        ) from exc
    return json.loads(text)


def key_problems(keys: Any) -> list[str]:
    """What is wrong with ``keys`` as the setting's value (the keys are
    never quoted)."""
    if isinstance(keys, (str, bytes)):
        return [f"{SETTING} must be a list of keys (newest first), not one string."]
    if not isinstance(keys, (list, tuple)):
        return [f"{SETTING} must be a list of keys (newest first), not a {type(keys).__name__}."]
    return [
        f"{SETTING}[{index}] is not a Fernet key ({FERNET_KEY})."
        for index, key in enumerate(keys)
        if not _is_fernet_key(key)
    ]


def _is_fernet_key(key: Any) -> bool:
    if isinstance(key, str):
        key = key.encode("ascii", "replace")
    if not isinstance(key, bytes):
        return False
    try:
        return len(base64.urlsafe_b64decode(key)) == 32
    except (binascii.Error, ValueError):
        return False


def _count() -> int:
    keys = conf.get(conf.ENCRYPTION_KEYS)
    return len(keys) if isinstance(keys, (list, tuple)) else 0


def _fernet(failing: str) -> Any:
    """The keys' MultiFernet; ``failing`` starts the error's message."""
    keys = conf.get(conf.ENCRYPTION_KEYS)
    problems = key_problems(keys)
    if problems:
        raise EncryptionError(f"{failing}: {' '.join(problems)}")
    if not keys:
        raise EncryptionError(
            f"{failing}: {SETTING} is empty in this process. "
            "Give it the keys (newest first) that your other processes use."
        )
    return _multi_fernet(tuple(key if isinstance(key, str) else key.decode() for key in keys))


@lru_cache(maxsize=4)
def _multi_fernet(keys: tuple[str, ...]) -> Any:
    # Imported here: cryptography is an optional extra, loaded only by a
    # process that seals or opens a value.
    try:
        from cryptography.fernet import Fernet, MultiFernet  # noqa: PLC0415
    except ImportError as exc:
        raise EncryptionError(
            f"Encrypted tasks need the cryptography package, which is not installed: {INSTALL}."
        ) from exc
    return MultiFernet([Fernet(key) for key in keys])
