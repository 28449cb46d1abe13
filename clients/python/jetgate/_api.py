"""The API's unary calls, shared by the blocking and the asyncio clients:
each function builds one request and says how its answer becomes what the
client returns."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any, Callable, Iterable, NamedTuple, Optional, Sequence, Union

from google.protobuf import timestamp_pb2

from jetgate import _config, _message
from jetgate._errors import code_name
from jetgate.v1 import consumer_pb2, stream_pb2

CONSUMERS, STREAMS = "consumers", "streams"


class Call(NamedTuple):
    """One unary call: the service and method, the request, how to read the
    answer, and the time it may take beyond the client's timeout."""

    service: str
    method: str
    request: Any
    result: Callable[[Any], Any] = lambda r: r
    extra_time: float = 0.0


@dataclasses.dataclass(frozen=True)
class BatchMessage:
    """One message of publish_batch; ttl in seconds (streams with allow_msg_ttl)."""

    subject: str
    data: bytes
    headers: Optional[_message.Headers] = None
    ttl: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class BatchAck:
    """JetStream's acknowledgement of an atomic batch: each message's sequence, in order."""

    stream: str
    seqs: list[int]


@dataclasses.dataclass(frozen=True)
class PauseState:
    """A consumer's pause as the server took it (pause_until None once resumed)."""

    paused: bool
    pause_until: Optional[datetime.datetime]


@dataclasses.dataclass(frozen=True)
class RedriveFailure:
    """One dead letter that was not redriven: its sequence in the dead-letter
    stream, the gRPC code's name, the UPPER_SNAKE reason and a sentence."""

    seq: int
    code: str
    reason: str
    message: str


@dataclasses.dataclass(frozen=True)
class RedriveResult:
    """How many dead letters were republished and removed, and those that were not."""

    redriven: int
    failures: list[RedriveFailure]


class FetchResult(list):
    """The messages of a fetch (a list), with why none came (empty_reason:
    "" when some did, else NO_MESSAGES, MAX_ACK_PENDING, MAX_BYTES,
    MAX_WAITING, PAUSED, PINNED or BELOW_MIN_PENDING) and, for a
    pinned_client group, the pin to send with the next fetch (pin_id)."""

    def __init__(self, messages: Iterable[Any], empty_reason: str, pin_id: str) -> None:
        super().__init__(messages)
        self.empty_reason = empty_reason
        self.pin_id = pin_id


def _timestamp(t: datetime.datetime) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromDatetime(t)  # a naive datetime is taken as UTC, as protobuf takes it
    return ts


def _datetime(ts: timestamp_pb2.Timestamp) -> datetime.datetime:
    return ts.ToDatetime(tzinfo=datetime.timezone.utc)


def publish(stream: str, subject: str, data: bytes, headers: Any, msg_id: Optional[str], ttl: Optional[float]) -> Call:
    req = stream_pb2.PublishRequest(
        stream=stream, subject=subject, data=bytes(data), headers=_message.headers_pb(headers), msg_id=msg_id or ""
    )
    if ttl is not None:
        req.ttl.CopyFrom(_message.duration(ttl))
    return Call(STREAMS, "Publish", req, lambda r: _message.PublishAck(r.stream, r.seq, r.duplicate))


def publish_batch(stream: str, messages: Iterable[Union[BatchMessage, Sequence[Any]]]) -> Call:
    req = stream_pb2.PublishBatchRequest(stream=stream)
    for m in messages:
        if not isinstance(m, BatchMessage):
            m = BatchMessage(*m)
        bm = req.messages.add(subject=m.subject, data=bytes(m.data), headers=_message.headers_pb(m.headers))
        if m.ttl is not None:
            bm.ttl.CopyFrom(_message.duration(m.ttl))
    return Call(STREAMS, "PublishBatch", req, lambda r: BatchAck(r.stream, list(r.seqs)))


def fetch(
    stream: str, consumer: str, batch: int, expires: float, max_bytes: Optional[int], group: str,
    min_pending: int, min_ack_pending: int, priority: int, pin_id: str,
) -> Call:
    req = consumer_pb2.FetchRequest(
        stream=stream, consumer=consumer, batch=batch, expires=_message.duration(expires), group=group,
        min_pending=min_pending, min_ack_pending=min_ack_pending, priority=priority, pin_id=pin_id,
    )
    if max_bytes is not None:
        req.max_bytes = max_bytes
    return Call(CONSUMERS, "Fetch", req, extra_time=expires)


def fetched(resp: Any, make: Callable[[Any], Any]) -> FetchResult:
    reason = ""
    if resp.empty_reason:
        reason = consumer_pb2.EmptyReason.Name(resp.empty_reason).removeprefix("EMPTY_REASON_")
    return FetchResult((make(m) for m in resp.messages), reason, resp.pin_id)


def get_consumer(stream: str, consumer: str) -> Call:
    return Call(CONSUMERS, "GetConsumer", consumer_pb2.GetConsumerRequest(stream=stream, consumer=consumer))


def pause(stream: str, consumer: str, until: Optional[datetime.datetime], duration: Optional[float]) -> Call:
    if (until is None) == (duration is None):
        raise ValueError("pause takes until (a datetime) or duration (seconds from now), one of them")
    if until is None:
        until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=duration)
    req = consumer_pb2.PauseRequest(stream=stream, consumer=consumer, pause_until=_timestamp(until))
    return Call(
        CONSUMERS, "Pause", req,
        lambda r: PauseState(r.paused, _datetime(r.pause_until) if r.HasField("pause_until") else None),
    )


def resume(stream: str, consumer: str) -> Call:
    return Call(
        CONSUMERS, "Resume", consumer_pb2.ResumeRequest(stream=stream, consumer=consumer),
        lambda r: PauseState(r.paused, None),
    )


def unpin(stream: str, consumer: str, group: str) -> Call:
    return Call(
        CONSUMERS, "Unpin", consumer_pb2.UnpinRequest(stream=stream, consumer=consumer, group=group), lambda r: None
    )


def seek(
    stream: str, consumer: str, sequence: Optional[int], time: Optional[datetime.datetime], ack_floor: bool
) -> Call:
    given = [n for n, set_ in (("sequence", sequence is not None), ("time", time is not None), ("ack_floor", ack_floor)) if set_]
    if len(given) != 1:
        raise ValueError(
            "seek takes exactly one of sequence (a stream sequence), time (a datetime) or ack_floor=True"
            + (f"; it was given {' and '.join(given)}" if given else "")
        )
    req = consumer_pb2.SeekRequest(stream=stream, consumer=consumer)
    if sequence is not None:
        if isinstance(sequence, bool) or not isinstance(sequence, int) or sequence < 1:
            raise ValueError(f"seek: sequence is a stream sequence, 1 or more, not {sequence!r}")
        req.sequence = sequence
    elif time is not None:
        req.time.CopyFrom(_timestamp(time))
    else:
        req.ack_floor = True
    return Call(CONSUMERS, "Seek", req)


def create_consumer(stream: str, config: _config.ConfigLike) -> Call:
    req = consumer_pb2.CreateConsumerRequest(stream=stream, config=_config.consumer_config(config))
    return Call(CONSUMERS, "CreateConsumer", req)


def update_consumer(
    stream: str, consumer: str, config: _config.ConfigLike, update_mask: Union[str, Iterable[str]]
) -> Call:
    req = consumer_pb2.UpdateConsumerRequest(
        stream=stream, consumer=consumer, config=_config.consumer_config(config),
        update_mask=_config.update_mask(update_mask),
    )
    return Call(CONSUMERS, "UpdateConsumer", req)


def delete_consumer(stream: str, consumer: str) -> Call:
    req = consumer_pb2.DeleteConsumerRequest(stream=stream, consumer=consumer)
    return Call(CONSUMERS, "DeleteConsumer", req, lambda r: None)


def redrive(stream: str, consumer: str, seqs: Optional[Iterable[int]]) -> Call:
    req = consumer_pb2.RedriveRequest(stream=stream, consumer=consumer, seqs=list(seqs or ()))
    return Call(
        CONSUMERS, "Redrive", req,
        lambda r: RedriveResult(
            r.redriven, [RedriveFailure(f.seq, code_name(f.code), f.reason, f.message) for f in r.failures]
        ),
    )


def list_streams() -> Call:
    return Call(STREAMS, "ListStreams", stream_pb2.ListStreamsRequest(), lambda r: list(r.streams))


def list_consumers(stream: str) -> Call:
    return Call(
        CONSUMERS, "ListConsumers", consumer_pb2.ListConsumersRequest(stream=stream), lambda r: list(r.consumers)
    )


def list_leases(stream: str, consumer: str) -> Call:
    return Call(CONSUMERS, "ListLeases", consumer_pb2.ListLeasesRequest(stream=stream, consumer=consumer))


def list_dead_letters(stream: str, consumer: str, page_size: int, page_token: str) -> Call:
    req = consumer_pb2.ListDeadLettersRequest(
        stream=stream, consumer=consumer, page_size=page_size, page_token=page_token
    )
    return Call(CONSUMERS, "ListDeadLetters", req)
