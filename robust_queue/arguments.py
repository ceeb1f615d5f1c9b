"""The JSON codec for task arguments and return values.

Arguments may use a few types JSON lacks; each is stored as a tagged dict
``{"__rq__": <tag>, "v": <payload>}``. So are floats that a database's JSON
type would not give back exactly (``-0.0``, ``1e308``). A user dict that itself has the tag
key is wrapped as ``{"__rq__": "dict", "v": {...}}`` so it round-trips.
Return values get no tags: Django's contract is that they are plain JSON.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeAlias

from django.apps import apps
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db import models

from . import conf

# DeserializationError lives with every other error; importable from here too.
from .exceptions import DeserializationError, ReturnValueError

TAG = "__rq__"
_SUPPORTED = (
    "supported: JSON types, datetime, date, time, timedelta, Decimal, UUID and model instances."
)
_RETURN_TYPES = "str, int, float, bool, None, list, tuple and dict with str keys"
# (args, kwargs) as a TaskResult shows them.
Shown: TypeAlias = "tuple[list[Any], dict[str, Any]]"
# Payloads that are not what their tag promises fail in one of these ways.
_MALFORMED = (TypeError, ValueError, ArithmeticError, AttributeError, LookupError)
# MariaDB refuses JSON nested 32 deep (error 4025): 31 lists/dicts at most.
MAX_JSON_NESTING = 31


def encode_arguments(args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``{"args": [...], "kwargs": {...}}`` made of JSON values only.

    Raises ``TypeError`` naming the argument's path (``kwargs['data'][2]``)
    when a value has no encoding.
    """
    encoded_kwargs = {}
    for key, value in kwargs.items():
        _check_key(key, "Argument kwargs")
        encoded_kwargs[key] = _to_json(value, f"Argument kwargs[{key!r}]", tagged=True)
    return {
        "args": [_to_json(v, f"Argument args[{i}]", tagged=True) for i, v in enumerate(args)],
        "kwargs": encoded_kwargs,
    }


def shown_arguments(args: Sequence[Any], kwargs: Mapping[str, Any]) -> Shown:
    """``(args, kwargs)`` as ``get_result()`` shows them, built from the
    values themselves after ``encode_arguments`` accepted them.

    What ``decode_arguments(encode_arguments(...), fetch_models=False)``
    gives, without parsing back what was just encoded: containers become
    lists and dicts, model instances their stored references.
    """
    return [_shown(v) for v in args], {key: _shown(v) for key, v in kwargs.items()}


def _shown(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_shown(item) for item in value]
    if isinstance(value, dict):
        return {key: _shown(item) for key, item in value.items()}
    if isinstance(value, models.Model):
        return {TAG: "model", "v": _model_reference(value, "Argument")}
    return value


def decode_arguments(
    data: Mapping[str, Any], *, fetch_models: bool = True, using: str | None = None
) -> tuple[list[Any], dict[str, Any]]:
    """Rebuild ``(args, kwargs)`` from the output of ``encode_arguments``.

    Model instances are fetched from ``using`` (``None``: the routers'
    choice); with ``fetch_models=False`` their tagged dicts are returned
    as stored, for display without queries.
    """
    decoder = _Decoder(fetch_models=fetch_models, using=using)
    args = [decoder.decode(value) for value in data.get("args", [])]
    kwargs = {key: decoder.decode(value) for key, value in data.get("kwargs", {}).items()}
    return args, kwargs


def encode_value(value: Any, path: str) -> Any:
    """One value encoded as an argument is (a step's checkpoint); raises
    ``TypeError`` naming ``path`` when it has no encoding, ``ValueError``
    when it nests deeper than every database stores."""
    if _nesting(value) > MAX_JSON_NESTING:
        raise ValueError(
            f"{path} is nested more than {MAX_JSON_NESTING} lists and dicts "
            "deep; MariaDB refuses deeper JSON."
        )
    return _to_json(value, path, tagged=True)


def decode_value(value: Any, *, using: str | None = None) -> Any:
    """The value ``encode_value`` encoded, model instances fetched from
    ``using``."""
    return _Decoder(fetch_models=True, using=using).decode(value)


def encoded_size(data: Mapping[str, Any]) -> int:
    """The size in bytes of ``data`` as compact (ASCII-escaped) JSON."""
    # ASCII-escaped: as many bytes as characters.
    return len(json.dumps(data, separators=(",", ":")))


def normalize_return_value(value: Any) -> Any:
    """Return ``value`` as plain JSON (tuples become lists).

    Raises ``TypeError`` naming the offending type when the value, or
    anything inside it, cannot be stored as JSON.
    """
    return _to_json(value, "Return value", tagged=False)


def storable_return_value(value: Any, *, max_bytes: int) -> Any:
    """``value`` as plain JSON that every supported database stores.

    Raises ``ReturnValueError`` when it is not JSON, is nested more than
    ``MAX_JSON_NESTING`` lists and dicts deep, or its JSON is longer than
    ``max_bytes``: checked before anything is written, so the job fails
    with a clear error instead of a database error at finalize.
    """
    if _nesting(value) > MAX_JSON_NESTING:
        raise ReturnValueError(
            f"Return value is nested more than {MAX_JSON_NESTING} lists and "
            "dicts deep; MariaDB refuses deeper JSON."
        )
    try:
        normalized = normalize_return_value(value)
        # ASCII-escaped, as Django writes JSONField values: a byte a character.
        size = len(json.dumps(normalized))
    except (TypeError, ValueError) as exc:  # ValueError: an int too long
        raise ReturnValueError(str(exc)) from exc
    if size > max_bytes:
        raise ReturnValueError(
            f"Return value is {size} bytes as JSON, over the limit of "
            f"{max_bytes} (OPTIONS['max_return_value_bytes'])."
        )
    return normalized


def _nesting(value: Any) -> int:
    """How many lists and dicts deep ``value`` goes.

    Iterative, and it stops just past the limit: a deep or cyclic value
    neither overflows the stack nor loops.
    """
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if depth > MAX_JSON_NESTING:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _to_json(value: Any, path: str, *, tagged: bool) -> Any:
    # bool is an int subclass and passes through as itself, not as 0/1.
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError(f"{path} is {value!r}, which JSON cannot represent.")
        return _float_to_json(value) if tagged else value
    if isinstance(value, (list, tuple)):
        return [_to_json(item, f"{path}[{i}]", tagged=tagged) for i, item in enumerate(value)]
    if isinstance(value, dict):
        return _dict_to_json(value, path, tagged=tagged)
    if tagged:
        return _tag(value, path)
    raise TypeError(
        f"{path} of type {type(value).__name__} cannot be stored as JSON; "
        f"return values must be {_RETURN_TYPES}."
    )


def _float_to_json(value: float) -> float | dict[str, Any]:
    # PostgreSQL's jsonb stores numbers as numeric: -0.0 comes back as 0
    # and 1e16 as the int 10000000000000000. Floats written with an
    # exponent, and -0.0, are stored as their repr so they round-trip.
    if "e" in repr(value) or (value == 0 and math.copysign(1.0, value) < 0):
        return {TAG: "float", "v": repr(value)}
    return value


def _dict_to_json(value: dict[Any, Any], path: str, *, tagged: bool) -> dict[str, Any]:
    result = {}
    for key, item in value.items():
        _check_key(key, path)
        result[key] = _to_json(item, f"{path}[{key!r}]", tagged=tagged)
    if tagged and TAG in result:
        return {TAG: "dict", "v": result}
    return result


def _check_key(key: Any, path: str) -> None:
    if not isinstance(key, str):
        raise TypeError(
            f"{path} has the key {key!r} of type {type(key).__name__}; dict keys must be str."
        )


def _tag(value: Any, path: str) -> dict[str, Any]:
    # datetime before date: every datetime is also a date.
    if isinstance(value, dt.datetime):
        return {TAG: "datetime", "v": value.isoformat()}
    if isinstance(value, dt.date):
        return {TAG: "date", "v": value.isoformat()}
    if isinstance(value, dt.time):
        return {TAG: "time", "v": value.isoformat()}
    if isinstance(value, dt.timedelta):
        # Integer parts, not total_seconds(): a float loses microseconds.
        return {TAG: "timedelta", "v": [value.days, value.seconds, value.microseconds]}
    if isinstance(value, Decimal):
        return {TAG: "decimal", "v": str(value)}
    if isinstance(value, uuid.UUID):
        return {TAG: "uuid", "v": str(value)}
    if isinstance(value, models.Model):
        return {TAG: "model", "v": _model_reference(value, path)}
    raise TypeError(f"{path} of type {type(value).__name__} cannot be encoded; {_SUPPORTED}")


def _model_reference(instance: models.Model, path: str) -> dict[str, Any]:
    if instance.pk is None:
        raise TypeError(
            f"{path} is an unsaved {type(instance).__name__} (its pk is None); "
            "save it before enqueueing."
        )
    label = instance._meta.label_lower
    if not _is_allowed_model(label):
        raise TypeError(
            f"{path} is a {instance._meta.label}, which ROBUST_QUEUE"
            f"['argument_models'] does not list; add {label!r} to it or pass the pk."
        )
    return {
        "model": instance._meta.label_lower,
        "pk": _to_json(instance.pk, f"{path}.pk", tagged=True),
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class _Decoder:
    fetch_models: bool
    using: str | None

    def decode(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.decode(item) for item in value]
        if not isinstance(value, dict):
            return value
        if TAG in value:
            return self._untag(value)
        return {key: self.decode(item) for key, item in value.items()}

    def _untag(self, value: dict[str, Any]) -> Any:
        tag, payload = value[TAG], value.get("v")
        if tag == "dict":
            if not isinstance(payload, dict):
                raise DeserializationError(f"Malformed 'dict' argument: {payload!r}.")
            return {key: self.decode(item) for key, item in payload.items()}
        if tag == "model":
            return self._fetch(payload) if self.fetch_models else value
        parse = _PARSERS.get(tag) if isinstance(tag, str) else None
        if parse is None:
            raise DeserializationError(f"Unknown argument tag {tag!r}.")
        try:
            return parse(payload)
        except _MALFORMED as exc:
            raise DeserializationError(f"Malformed {tag!r} argument: {payload!r}.") from exc

    def _fetch(self, payload: Any) -> models.Model:
        model = _referenced_model(payload)
        pk = self._pk(payload["pk"], model)
        try:
            return model._default_manager.using(self.using).get(pk=pk)
        except ObjectDoesNotExist as exc:
            raise DeserializationError(
                f"{model._meta.label} with pk {pk!r} no longer exists."
            ) from exc
        except (*_MALFORMED, ValidationError) as exc:
            raise DeserializationError(f"Malformed 'model' argument: {payload!r} ({exc}).") from exc

    def _pk(self, value: Any, model: type[models.Model]) -> Any:
        # Only what _model_reference() writes: a scalar, or a list of them
        # for a composite key; never a nested model reference or dict.
        if isinstance(value, list) and len(_pk_fields(model)) > 1:
            return tuple(self._pk_part(part, model) for part in value)
        return self._pk_part(value, model)

    def _pk_part(self, value: Any, model: type[models.Model]) -> Any:
        if isinstance(value, dict) and value.get(TAG) in _PARSERS:
            return self._untag(value)
        if isinstance(value, (dict, list)):
            raise DeserializationError(
                f"Malformed primary key of a {model._meta.label} argument: {value!r}."
            )
        return value


def _referenced_model(payload: Any) -> type[models.Model]:
    """The model a reference names, if the encoding side could have written it."""
    label = payload.get("model") if isinstance(payload, dict) else None
    if not isinstance(label, str) or set(payload) != {"model", "pk"}:
        raise DeserializationError(f"Malformed 'model' argument: {payload!r}.")
    try:
        model = apps.get_model(label)
    except (LookupError, ValueError) as exc:
        raise DeserializationError(
            f"Malformed 'model' argument or uninstalled model: {payload!r}."
        ) from exc
    if model._meta.label_lower != label or model._meta.swapped:
        raise DeserializationError(f"Malformed 'model' argument: {payload!r}.")
    if not _is_allowed_model(label):
        raise DeserializationError(
            f"Model {label!r} is not in ROBUST_QUEUE['argument_models']; "
            "its rows are not loaded into tasks."
        )
    return model


def _is_allowed_model(label: str) -> bool:
    allowed = conf.get(conf.ARGUMENT_MODELS)
    return allowed is None or label in allowed


def _pk_fields(model: type[models.Model]) -> list[Any]:
    # Django >= 5.2 lists the fields of a composite primary key here.
    return list(getattr(model._meta, "pk_fields", [model._meta.pk]))


def _timedelta(parts: Sequence[int]) -> dt.timedelta:
    days, seconds, microseconds = parts
    return dt.timedelta(days=days, seconds=seconds, microseconds=microseconds)


_PARSERS: dict[str, Callable[[Any], Any]] = {
    "float": float,
    "datetime": dt.datetime.fromisoformat,
    "date": dt.date.fromisoformat,
    "time": dt.time.fromisoformat,
    "timedelta": _timedelta,
    "decimal": Decimal,
    "uuid": uuid.UUID,
}
