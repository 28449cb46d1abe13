"""Messages as the library hands them out, and conversions to and from the API."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Mapping, Optional, Sequence, Union

from google.protobuf import duration_pb2

from jetgate.v1 import consumer_pb2

Headers = Mapping[str, Union[str, Sequence[str]]]


@dataclasses.dataclass(frozen=True)
class Metadata:
    """What JetStream says about one delivery."""

    stream: str
    consumer: str
    stream_seq: int
    consumer_seq: int
    num_delivered: int
    num_pending: int
    timestamp: datetime.datetime


@dataclasses.dataclass(frozen=True)
class PublishAck:
    """JetStream's acknowledgement of a publish."""

    stream: str
    seq: int
    duplicate: bool


def duration(seconds: float) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromNanoseconds(int(round(seconds * 1e9)))
    return d


def headers_pb(headers: Headers | None) -> dict[str, consumer_pb2.HeaderValues]:
    out: dict[str, consumer_pb2.HeaderValues] = {}
    for k, v in (headers or {}).items():
        values = [v] if isinstance(v, str) else list(v)
        out[k] = consumer_pb2.HeaderValues(values=values)
    return out


def metadata_of(pb: consumer_pb2.Message) -> Metadata:
    m = pb.metadata
    return Metadata(
        stream=m.stream,
        consumer=m.consumer,
        stream_seq=m.stream_seq,
        consumer_seq=m.consumer_seq,
        num_delivered=m.num_delivered,
        num_pending=m.num_pending,
        timestamp=m.timestamp.ToDatetime(tzinfo=datetime.timezone.utc),
    )


class BaseMessage:
    """One leased delivery: data, subject, headers (each a list of values),
    metadata, and the token that settles it (replaced by each extend).
    headers and metadata are converted from the wire on first use."""

    __slots__ = ("subject", "data", "token", "_pb", "_headers", "_metadata", "_deadline", "_stream", "_consumer")

    def __init__(self, pb: consumer_pb2.Message, stream: str, consumer: str) -> None:
        self.subject: str = pb.subject
        self.data: bytes = pb.data
        self.token: str = pb.token
        self._pb = pb
        self._headers: Optional[dict[str, list[str]]] = None
        self._metadata: Optional[Metadata] = None
        self._deadline: Optional[datetime.datetime] = None
        self._stream = stream
        self._consumer = consumer

    @property
    def headers(self) -> dict[str, list[str]]:
        if self._headers is None:
            self._headers = {k: list(v.values) for k, v in self._pb.headers.items()}
        return self._headers

    @property
    def metadata(self) -> Metadata:
        if self._metadata is None:
            self._metadata = metadata_of(self._pb)
        return self._metadata

    @property
    def lease_deadline(self) -> datetime.datetime:
        """When the lease ends (UTC); moved by each extend."""
        if self._deadline is None:
            self._deadline = self._pb.lease_deadline.ToDatetime(tzinfo=datetime.timezone.utc)
        return self._deadline

    @lease_deadline.setter
    def lease_deadline(self, value: datetime.datetime) -> None:
        self._deadline = value

    def __repr__(self) -> str:
        m = self.metadata
        return f"<{type(self).__name__} {self.subject} seq={m.stream_seq} delivered={m.num_delivered}>"
