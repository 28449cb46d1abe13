"""Consumer configurations for create_consumer and update_consumer: a dict
with the snake_case names of the API's ConsumerConfig (durations in seconds,
times as datetimes, enums by name) or the generated message itself."""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any, Iterable, Union

from google.protobuf import descriptor, field_mask_pb2, timestamp_pb2

from jetgate import _message
from jetgate.v1 import consumer_pb2

ConfigLike = Union[Mapping[str, Any], consumer_pb2.ConsumerConfig]

_FIELDS = consumer_pb2.ConsumerConfig.DESCRIPTOR.fields_by_name
_DURATION = "google.protobuf.Duration"


def consumer_config(config: ConfigLike) -> consumer_pb2.ConsumerConfig:
    """The API's ConsumerConfig for a dict of its fields (or a copy of the
    message given). Raises ValueError for a key that is not a field, or a
    value that does not fit it."""
    if isinstance(config, consumer_pb2.ConsumerConfig):
        out = consumer_pb2.ConsumerConfig()
        out.CopyFrom(config)
        return out
    if not isinstance(config, Mapping):
        raise TypeError(f"config is a dict or a jetgate.v1.consumer_pb2.ConsumerConfig, not {type(config).__name__}")
    out = consumer_pb2.ConsumerConfig()
    for key, value in config.items():
        field = _FIELDS.get(key)
        if field is None:
            raise ValueError(f"config: {key!r} is not a field of ConsumerConfig (fields: {', '.join(sorted(_FIELDS))})")
        try:
            _set(out, field, value)
        except (TypeError, ValueError) as e:
            raise ValueError(f"config: {key}: {e}") from None
    return out


def _set(msg: Any, field: descriptor.FieldDescriptor, value: Any) -> None:
    name = field.name
    if value is None:
        return
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        getattr(msg, name).update({str(k): str(v) for k, v in dict(value).items()})
    elif field.label == descriptor.FieldDescriptor.LABEL_REPEATED:
        if isinstance(value, (str, bytes)):
            raise TypeError("a list, not a string")
        target = getattr(msg, name)
        if field.message_type is not None:  # backoff: durations
            target.extend(_duration(v) for v in value)
        else:
            target.extend(value)
    elif field.message_type is not None:
        full = field.message_type.full_name
        getattr(msg, name).CopyFrom(_duration(value) if full == _DURATION else _timestamp(value))
    elif field.enum_type is not None:
        setattr(msg, name, _enum(field.enum_type, value))
    else:
        setattr(msg, name, value)


def _duration(v: Any) -> Any:
    if isinstance(v, datetime.timedelta):
        v = v.total_seconds()
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"a duration is seconds (a number) or a timedelta, not {v!r}")
    return _message.duration(v)


def _timestamp(v: Any) -> Any:
    if not isinstance(v, datetime.datetime):
        raise TypeError(f"a time is a datetime (naive is UTC), not {v!r}")
    ts = timestamp_pb2.Timestamp()
    ts.FromDatetime(v)
    return ts


def _enum(enum: descriptor.EnumDescriptor, v: Any) -> int:
    """An enum value by number, by its full name (DELIVER_POLICY_ALL) or by
    its short name in any case ("all", "by_start_sequence")."""
    if isinstance(v, int) and not isinstance(v, bool):
        if v not in enum.values_by_number:
            raise ValueError(f"{v} is not a {enum.name}")
        return v
    prefix = re.sub(r"(?<!^)(?=[A-Z])", "_", enum.name).upper() + "_"  # DeliverPolicy: DELIVER_POLICY_
    if isinstance(v, str):
        for name in (v.upper(), prefix + v.upper()):
            if name in enum.values_by_name and not name.endswith("_UNSPECIFIED"):
                return enum.values_by_name[name].number
    names = [n[len(prefix):].lower() for n in enum.values_by_name if not n.endswith("_UNSPECIFIED")]
    raise ValueError(f"{v!r} is not a {enum.name} (one of {', '.join(names)})")


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name.strip()).lower()


def update_mask(mask: Union[str, Iterable[str]]) -> field_mask_pb2.FieldMask:
    """A FieldMask of ConsumerConfig field names: a list, or one string
    separated by commas; snake_case or camelCase ("ackWait,maxDeliver")."""
    names = mask.split(",") if isinstance(mask, str) else list(mask)
    paths = [_snake(n) for n in names if n.strip()]
    if not paths:
        raise ValueError("update_mask names no field: say which fields to change (e.g. ['ack_wait'])")
    unknown = [p for p in paths if p not in _FIELDS]
    if unknown:
        raise ValueError(f"update_mask: {', '.join(unknown)} not a field of ConsumerConfig")
    return field_mask_pb2.FieldMask(paths=paths)
