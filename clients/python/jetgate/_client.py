"""The blocking client: publish, fetch, settle, get_consumer, subscribe."""

from __future__ import annotations

from typing import Any, Callable, Optional

import grpc

from jetgate import _message, _ops, _trace
from jetgate._errors import Error, SettleError, from_rpc
from jetgate.v1 import consumer_pb2, consumer_pb2_grpc, stream_pb2, stream_pb2_grpc

DEFAULT_TIMEOUT = 10.0  # seconds a unary call may take, beyond a fetch's expires


def call_metadata(api_key: Optional[str]) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {api_key}"),) if api_key else ()


def publish_request(stream: str, subject: str, data: bytes, headers: Any, msg_id: Optional[str]) -> Any:
    return stream_pb2.PublishRequest(
        stream=stream,
        subject=subject,
        data=bytes(data),
        headers=_message.headers_pb(headers),
        msg_id=msg_id or "",
    )


def fetch_request(stream: str, consumer: str, batch: int, expires: float) -> Any:
    return consumer_pb2.FetchRequest(
        stream=stream, consumer=consumer, batch=batch, expires=_message.duration(expires)
    )


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
        self._channel = grpc.secure_channel(address, tls) if tls else grpc.insecure_channel(address)
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

    def publish(self, stream: str, subject: str, data: bytes, headers: Any = None, msg_id: Optional[str] = None) -> _message.PublishAck:
        """Stores a message in stream; headers map a name to a value or a list of values."""
        r = self._call(self._streams.Publish, publish_request(stream, subject, data, headers, msg_id))
        return _message.PublishAck(r.stream, r.seq, r.duplicate)

    def fetch(self, stream: str, consumer: str, batch: int = 1, expires: float = 5.0) -> list[Message]:
        """Leases up to batch messages, waiting up to expires seconds for the first."""
        r = self._call(self._consumers.Fetch, fetch_request(stream, consumer, batch, expires), expires + self._timeout)
        return [Message(m, stream, consumer, self._settle_one) for m in r.messages]

    def get_consumer(self, stream: str, consumer: str) -> consumer_pb2.GetConsumerResponse:
        """The consumer's configuration and live state (the API's GetConsumerResponse)."""
        return self._call(self._consumers.GetConsumer, consumer_pb2.GetConsumerRequest(stream=stream, consumer=consumer))

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
        ack_batch: int = 100,
        on_error: Optional[Callable[[Exception], Any]] = None,
        *,
        nak_delay: float = 1.0,
        max_nak_delay: float = 60.0,
    ) -> "Subscriber":
        """Runs handler on the consumer's messages in a pool of threads until
        the returned Subscriber is closed. See the README for the rules."""
        from jetgate._sync import Subscriber

        opts = dict(
            max_messages=max_messages, max_bytes=max_bytes, max_lease=max_lease, ack_batch=ack_batch,
            nak_delay=nak_delay, max_nak_delay=max_nak_delay, on_error=on_error,
        )
        return Subscriber(self.address, self._api_key, self._tls, stream, consumer, handler, concurrency, opts)
