"""Encoding task arguments as JSON, with tags for the types JSON lacks."""

from __future__ import annotations

import datetime as dt
import json
import math
import uuid
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from django.apps import apps
from django.db import models

TAG = "__rq__"
SUPPORTED = (
    "supported: JSON types, datetime, date, time, timedelta, Decimal, UUID "
    "and model instances."
)


class DeserializationError(Exception):
    """A stored argument cannot be rebuilt (e.g. the model row is gone)."""


def encode_arguments(args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON form of a task's arguments; ``TypeError`` names a bad one."""
    return {
        "args": [_encode(value, f"args[{i}]") for i, value in enumerate(args)],
        "kwargs": {
            _key(key, "kwargs"): _encode(value, f"kwargs[{key!r}]")
            for key, value in kwargs.items()
        },
    }


def decode_arguments(
    data: Mapping[str, Any], *, fetch_models: bool = True, using: str | None = None
) -> tuple[list[Any], dict[str, Any]]:
    """Rebuild ``(args, kwargs)`` from ``encode_arguments`` output."""
    decoder = _Decoder(fetch_models, using)
    args = [decoder.decode(value) for value in data.get("args", [])]
    kwargs = {key: decoder.decode(value) for key, value in data.get("kwargs", {}).items()}
    return args, kwargs


def encoded_size(data: Mapping[str, Any]) -> int:
    return len(json.dumps(data, separators=(",", ":")).encode("utf-8"))


def normalize_return_value(value: Any) -> Any:
    """The JSON form of a return value; ``TypeError`` if it has none."""
    return _plain(value, "return value")


def _plain(value: Any, path: str) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return _finite(value, path)
    if isinstance(value, (list, tuple)):
        return [_plain(item, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, dict):
        return {_key(k, path): _plain(v, f"{path}[{k!r}]") for k, v in value.items()}
    raise TypeError(f"{path} of type {type(value).__name__} is not JSON.")


def _encode(value: Any, path: str) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return _finite(value, path)
    if isinstance(value, (list, tuple)):
        return [_encode(item, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, dict):
        encoded = {_key(k, path): _encode(v, f"{path}[{k!r}]") for k, v in value.items()}
        return {TAG: "dict", "v": encoded} if TAG in encoded else encoded
    tagged = _tagged(value, path)
    if tagged is None:
        raise TypeError(
            f"Argument {path} of type {type(value).__name__} cannot be encoded; "
            f"{SUPPORTED}"
        )
    return {TAG: tagged[0], "v": tagged[1]}


def _tagged(value: Any, path: str) -> tuple[str, Any] | None:
    # datetime before date: a datetime is a date.
    if isinstance(value, dt.datetime):
        return "datetime", value.isoformat()
    if isinstance(value, dt.date):
        return "date", value.isoformat()
    if isinstance(value, dt.time):
        return "time", value.isoformat()
    if isinstance(value, dt.timedelta):
        return "timedelta", [value.days, value.seconds, value.microseconds]
    if isinstance(value, Decimal):
        return "decimal", str(value)
    if isinstance(value, uuid.UUID):
        return "uuid", str(value)
    if isinstance(value, models.Model):
        if value.pk is None:
            raise TypeError(f"Argument {path} is an unsaved {type(value).__name__}.")
        return "model", [value._meta.label_lower, _encode(value.pk, f"{path}.pk")]
    return None


def _finite(value: float, path: str) -> float:
    if not math.isfinite(value):
        raise TypeError(f"Argument {path} is {value}, which JSON cannot hold.")
    return value


def _key(key: Any, path: str) -> str:
    if not isinstance(key, str):
        raise TypeError(
            f"{path} has a key of type {type(key).__name__}; keys must be str."
        )
    return key


class _Decoder:
    def __init__(self, fetch_models: bool, using: str | None) -> None:
        self.fetch_models = fetch_models
        self.using = using

    def decode(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.decode(item) for item in value]
        if not isinstance(value, dict):
            return value
        if TAG not in value:
            return {key: self.decode(item) for key, item in value.items()}
        return self._untag(value)

    def _untag(self, value: dict[str, Any]) -> Any:
        tag, payload = value[TAG], value.get("v")
        if tag == "dict":
            return {key: self.decode(item) for key, item in payload.items()}
        if tag == "model":
            return self._model(value) if self.fetch_models else value
        parse = _PARSERS.get(tag)
        if parse is None:
            raise DeserializationError(f"Unknown argument tag {tag!r}.")
        return parse(payload)

    def _model(self, value: dict[str, Any]) -> models.Model:
        label, pk = value["v"][0], self.decode(value["v"][1])
        model = apps.get_model(label)
        manager = model._default_manager
        if self.using is not None:
            manager = manager.db_manager(self.using)
        try:
            return manager.get(pk=pk)
        except model.DoesNotExist as exc:
            raise DeserializationError(
                f"{model._meta.label} with pk {pk!r} no longer exists."
            ) from exc


_PARSERS = {
    "datetime": dt.datetime.fromisoformat,
    "date": dt.date.fromisoformat,
    "time": dt.time.fromisoformat,
    "timedelta": lambda parts: dt.timedelta(
        days=parts[0], seconds=parts[1], microseconds=parts[2]
    ),
    "decimal": Decimal,
    "uuid": uuid.UUID,
}
