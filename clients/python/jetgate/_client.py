"""The blocking client: every unary call of the API, the settles, and subscribe."""

from __future__ import annotations

import datetime
from typing import Any, Callable, Iterable, Optional, Sequence, Union

import grpc

from jetgate import _api, _config, _message, _ops, _trace
from jetgate._errors import Error, SettleError, from_rpc
from jetgate.v1 import consumer_pb2, consumer_pb2_grpc, stream_pb2, stream_pb2_grpc

DEFAULT_TIMEOUT = 10.0  # seconds a unary call may take, beyond a fetch's expires


def call_metadata(api_key: Optional[str]) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {api_key}"),) if api_key else ()


# A channel tries to reconnect within the subscriber's own backoff (0.1s
# doubling to 5s): gRPC's default (1s growing to 120s) fails every call at
# once while it waits, so a gateway back after an outage of a minute was
# reached up to two minutes later.
CHANNEL_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 5000),
)


def channel(module: Any, address: str, tls: Optional[grpc.ChannelCredentials]) -> Any:
    """A channel of module (grpc or grpc.aio) to address, with TLS if given."""
    if tls:
        return module.secure_channel(address, tls, options=CHANNEL_OPTIONS)
    return module.insecure_channel(address, options=CHANNEL_OPTIONS)


def one_result(op: str, msg: _message.BaseMessage, resp: Any) -> None:
    """Applies the outcome of a settle of msg alone: raises its failure, and
    after an extend moves msg to its new token and deadline (after an extend
    by 0, which gives it back, msg keeps its token, which the gateway now
    refuses, and its deadline is when it went back)."""
    r = _ops.results(op, [msg.token], resp)[0]
    if isinstance(r, SettleError):
        raise r
    if isinstance(r, _ops.Extended):
        msg.token, msg.lease_deadline = r.token or msg.token, r.deadline


class Message(_message.BaseMessage):
    """A leased message; ack, nak, term and extend return once the gateway has
    confirmed them and raise jetgate.SettleError with the reason otherwise.
    extend moves the message to the new token it is given."""

    __slots__ = ("_settle",)

    def __init__(self, pb: Any, stream: str, consumer: str, settle: Callable[[Any, str, Any], None]) -> None:
        super().__init__(pb, stream, consumer)
        self._settle = settle

    def ack(self) -> None:
        self._settle(self, "ack", None)

    def nak(self, delay: float = 0.0) -> None:
        self._settle(self, "nak", delay)

    def term(self, reason: str = "") -> None:
        self._settle(self, "term", reason)

    def extend(self, duration: Optional[float] = None) -> None:
        """Extends the lease. duration (seconds) unset: one ack_wait from
        now. 0: gives the message back now (a Nak: redelivered at once). Up
        to the gateway's limits.max_lease (default 1h): the jetgate replica
        that issued the lease keeps it alive that long, and token and
        lease_deadline carry the deadline asked for; that keep-alive ends if
        the replica stops (the message is then redelivered one ack_wait after
        its last renewal). Longer, or negative: SettleError with code
        INVALID_ARGUMENT."""
        self._settle(self, "extend", duration)


class Client:
    """A blocking jetgate client on one gRPC channel. tls is a
    grpc.ChannelCredentials (None: plaintext); api_key is sent as a bearer
    credential with every call."""

    def __init__(
        self,
        address: str,
        api_key: Optional[str] = None,
        tls: Optional[grpc.ChannelCredentials] = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.address, self._api_key, self._tls = address, api_key, tls
        self._timeout = timeout
        self._md = call_metadata(api_key)
        self._channel = channel(grpc, address, tls)
        self._consumers = consumer_pb2_grpc.ConsumerServiceStub(self._channel)
        self._streams = stream_pb2_grpc.StreamServiceStub(self._channel)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Closes the channel; subscribers have channels of their own."""
        self._channel.close()

    def _call(self, method: Callable[..., Any], req: Any, timeout: Optional[float] = None) -> Any:
        try:
            return method(req, timeout=timeout or self._timeout, metadata=_trace.outgoing(self._md))
        except grpc.RpcError as e:
            raise from_rpc(e) from e

    def _do(self, c: _api.Call) -> Any:
        stub = self._consumers if c.service == _api.CONSUMERS else self._streams
        return c.result(self._call(getattr(stub, c.method), c.request, c.extra_time + self._timeout))

    def publish(
        self, stream: str, subject: str, data: bytes, headers: Any = None, msg_id: Optional[str] = None,
        ttl: Optional[float] = None,
    ) -> _message.PublishAck:
        """Stores a message in stream; headers map a name to a value or a list
        of values; ttl (seconds) is the message's own time to live."""
        return self._do(_api.publish(stream, subject, data, headers, msg_id, ttl))

    def publish_batch(self, stream: str, messages: Iterable[Union[_api.BatchMessage, Sequence[Any]]]) -> _api.BatchAck:
        """Stores messages (BatchMessage, or (subject, data[, headers[, ttl]])
        tuples) all or none, on a stream with allow_atomic."""
        return self._do(_api.publish_batch(stream, messages))

    def fetch(
        self, stream: str, consumer: str, batch: int = 1, expires: float = 5.0, *, max_bytes: Optional[int] = None,
        group: str = "", min_pending: int = 0, min_ack_pending: int = 0, priority: int = 0, pin_id: str = "",
    ) -> _api.FetchResult:
        """Leases up to batch messages, waiting up to expires seconds for the
        first: a list, with empty_reason and pin_id. group, min_pending,
        min_ack_pending, priority and pin_id are for priority groups."""
        c = _api.fetch(stream, consumer, batch, expires, max_bytes, group, min_pending, min_ack_pending, priority, pin_id)
        return _api.fetched(self._do(c), lambda m: Message(m, stream, consumer, self._settle_one))

    def get_consumer(self, stream: str, consumer: str) -> consumer_pb2.GetConsumerResponse:
        """The consumer's configuration and live state (the API's GetConsumerResponse)."""
        return self._do(_api.get_consumer(stream, consumer))

    def pause(
        self, stream: str, consumer: str, until: Optional[datetime.datetime] = None, *, duration: Optional[float] = None
    ) -> _api.PauseState:
        """Stops the server delivering the consumer's messages until until (a
        datetime; naive is UTC) or for duration seconds, for every client."""
        return self._do(_api.pause(stream, consumer, until, duration))

    def resume(self, stream: str, consumer: str) -> _api.PauseState:
        """Lets a paused consumer deliver again at once."""
        return self._do(_api.resume(stream, consumer))

    def unpin(self, stream: str, consumer: str, group: str = "") -> None:
        """Releases the pinned client of a pinned_client priority group."""
        return self._do(_api.unpin(stream, consumer, group))

    def seek(
        self, stream: str, consumer: str, *, sequence: Optional[int] = None, time: Optional[datetime.datetime] = None,
        ack_floor: bool = False,
    ) -> consumer_pb2.SeekResponse:
        """Moves where the consumer delivers from, for every client: to a
        stream sequence, to the first message stored at or after time (a
        datetime; naive is UTC), or to its ack floor (ack_floor=True:
        everything not acknowledged comes again, now); exactly one. Leases
        held on it are void. The API's SeekResponse: reset_sequence (the
        sequence delivered next) and state. Needs nats-server 2.14 or later
        (else Error FAILED_PRECONDITION, SEEK_UNSUPPORTED)."""
        return self._do(_api.seek(stream, consumer, sequence, time, ack_floor))

    def create_consumer(self, stream: str, config: _config.ConfigLike) -> consumer_pb2.CreateConsumerResponse:
        """Creates a durable pull consumer with explicit acks, within the
        gateway's admin bounds: config is the API's ConsumerConfig or a dict
        of its snake_case fields (durable_name is the name; durations in
        seconds, times as datetimes, enums by name: deliver_policy="all").
        The API's CreateConsumerResponse: config and state."""
        return self._do(_api.create_consumer(stream, config))

    def update_consumer(
        self, stream: str, consumer: str, config: _config.ConfigLike, update_mask: Union[str, Iterable[str]]
    ) -> consumer_pb2.UpdateConsumerResponse:
        """Changes the fields update_mask names (["ack_wait", "max_deliver"],
        or "ackWait,maxDeliver") of a consumer created through the API to
        their values in config (as create_consumer takes it). The API's
        UpdateConsumerResponse: config and state."""
        return self._do(_api.update_consumer(stream, consumer, config, update_mask))

    def delete_consumer(self, stream: str, consumer: str) -> None:
        """Deletes a consumer created through the API: its leases are void,
        and callers waiting on it are answered."""
        return self._do(_api.delete_consumer(stream, consumer))

    def redrive(self, stream: str, consumer: str, seqs: Optional[Iterable[int]] = None) -> _api.RedriveResult:
        """Puts dead letters (their sequences in the dead-letter stream; none:
        all of the consumer's) back on their subjects."""
        return self._do(_api.redrive(stream, consumer, seqs))

    def list_streams(self) -> list[stream_pb2.StreamSummary]:
        """The streams this gateway serves consumers of that the caller may read."""
        return self._do(_api.list_streams())

    def list_consumers(self, stream: str) -> list[consumer_pb2.ConsumerSummary]:
        """The stream's consumers this gateway serves, with the backlog of each."""
        return self._do(_api.list_consumers(stream))

    def list_leases(self, stream: str, consumer: str) -> consumer_pb2.ListLeasesResponse:
        """Who holds the consumer's live leases, across every replica."""
        return self._do(_api.list_leases(stream, consumer))

    def list_dead_letters(
        self, stream: str, consumer: str, page_size: int = 0, page_token: str = ""
    ) -> consumer_pb2.ListDeadLettersResponse:
        """A page of the consumer's dead letters, oldest first; pass its
        next_page_token for the next one."""
        return self._do(_api.list_dead_letters(stream, consumer, page_size, page_token))

    def _settle_one(self, msg: _message.BaseMessage, op: str, arg: Any) -> None:
        name, req = _ops.request(op, msg._stream, msg._consumer, [msg.token], arg)
        try:
            resp = self._call(getattr(self._consumers, name), req)
        except Error as e:
            raise SettleError(e.reason, e.message, e.code, msg.token) from e
        one_result(op, msg, resp)

    def subscribe(
        self,
        stream: str,
        consumer: str,
        handler: Callable[[Message], Any],
        max_messages: int = 100,
        max_bytes: Optional[int] = None,
        concurrency: Optional[int] = None,
        max_lease: float = 3600.0,
        on_error: Optional[Callable[[Exception], Any]] = None,
        ack_batch: int = 100,
        *,
        nak_delay: float = 1.0,
        max_nak_delay: float = 600.0,
        group: str = "",
        min_pending: int = 0,
        min_ack_pending: int = 0,
        priority: int = 0,
    ) -> "Subscriber":
        """Runs handler on the consumer's messages in a pool of threads until
        the returned Subscriber is closed. See the README for the rules.
        group, min_pending, min_ack_pending and priority are for priority
        groups, as for fetch; a pinned_client group's pin is kept by the
        subscriber itself."""
        from jetgate._sync import Subscriber

        opts = dict(
            max_messages=max_messages, max_bytes=max_bytes, max_lease=max_lease, ack_batch=ack_batch,
            nak_delay=nak_delay, max_nak_delay=max_nak_delay, on_error=on_error,
            group=group, min_pending=min_pending, min_ack_pending=min_ack_pending, priority=priority,
        )
        return Subscriber(self.address, self._api_key, self._tls, stream, consumer, handler, concurrency, opts)
