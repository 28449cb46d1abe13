"""jetgate for asyncio: the same calls as jetgate.Client, as coroutines, and
a subscriber whose handler is a coroutine function."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any, Awaitable, Callable, Iterable, Optional, Sequence, Union

import grpc

from jetgate import _api, _config, _message, _ops, _trace
from jetgate._api import BatchAck, BatchMessage, FetchResult, PauseState, RedriveResult
from jetgate._client import DEFAULT_TIMEOUT, call_metadata, channel, one_result
from jetgate._engine import Engine, Options
from jetgate._errors import Error, Final, SettleError, from_rpc
from jetgate._held import Held, Stats
from jetgate._message import Metadata, PublishAck
from jetgate.v1 import consumer_pb2, consumer_pb2_grpc, stream_pb2, stream_pb2_grpc

__all__ = [
    "Client", "Message", "Subscriber", "Metadata", "PublishAck", "BatchMessage", "BatchAck", "FetchResult",
    "PauseState", "RedriveResult", "Error", "SettleError", "Final", "Stats",
]


class Message(_message.BaseMessage):
    """A leased message; ack, nak, term and extend are coroutines that return
    once the gateway has confirmed them and raise jetgate.SettleError otherwise."""

    __slots__ = ("_settle",)

    def __init__(self, pb: Any, stream: str, consumer: str, settle: Callable[[Any, str, Any], Awaitable[None]]) -> None:
        super().__init__(pb, stream, consumer)
        self._settle = settle

    async def ack(self) -> None:
        await self._settle(self, "ack", None)

    async def nak(self, delay: float = 0.0) -> None:
        await self._settle(self, "nak", delay)

    async def term(self, reason: str = "") -> None:
        await self._settle(self, "term", reason)

    async def extend(self, duration: Optional[float] = None) -> None:
        """As jetgate.Message.extend: duration in seconds; unset is one
        ack_wait, 0 gives the message back, up to limits.max_lease keeps it."""
        await self._settle(self, "extend", duration)


class Client:
    """An asyncio jetgate client on one gRPC channel (create it inside the
    event loop that uses it)."""

    def __init__(
        self,
        address: str,
        api_key: Optional[str] = None,
        tls: Optional[grpc.ChannelCredentials] = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.address = address
        self._timeout = timeout
        self._md = call_metadata(api_key)
        self._channel = channel(grpc.aio, address, tls)
        self._consumers = consumer_pb2_grpc.ConsumerServiceStub(self._channel)
        self._streams = stream_pb2_grpc.StreamServiceStub(self._channel)

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        await self._channel.close()

    async def _call(self, method: Callable[..., Any], req: Any, timeout: Optional[float] = None) -> Any:
        try:
            return await method(req, timeout=timeout or self._timeout, metadata=_trace.outgoing(self._md))
        except grpc.RpcError as e:
            raise from_rpc(e) from e

    async def _do(self, c: _api.Call) -> Any:
        stub = self._consumers if c.service == _api.CONSUMERS else self._streams
        return c.result(await self._call(getattr(stub, c.method), c.request, c.extra_time + self._timeout))

    async def publish(
        self, stream: str, subject: str, data: bytes, headers: Any = None, msg_id: Optional[str] = None,
        ttl: Optional[float] = None,
    ) -> PublishAck:
        return await self._do(_api.publish(stream, subject, data, headers, msg_id, ttl))

    async def publish_batch(self, stream: str, messages: Iterable[Union[BatchMessage, Sequence[Any]]]) -> BatchAck:
        return await self._do(_api.publish_batch(stream, messages))

    async def fetch(
        self, stream: str, consumer: str, batch: int = 1, expires: float = 5.0, *, max_bytes: Optional[int] = None,
        group: str = "", min_pending: int = 0, min_ack_pending: int = 0, priority: int = 0, pin_id: str = "",
    ) -> FetchResult:
        c = _api.fetch(stream, consumer, batch, expires, max_bytes, group, min_pending, min_ack_pending, priority, pin_id)
        return _api.fetched(await self._do(c), lambda m: Message(m, stream, consumer, self._settle_one))

    async def get_consumer(self, stream: str, consumer: str) -> consumer_pb2.GetConsumerResponse:
        return await self._do(_api.get_consumer(stream, consumer))

    async def pause(
        self, stream: str, consumer: str, until: Optional[datetime.datetime] = None, *, duration: Optional[float] = None
    ) -> PauseState:
        return await self._do(_api.pause(stream, consumer, until, duration))

    async def resume(self, stream: str, consumer: str) -> PauseState:
        return await self._do(_api.resume(stream, consumer))

    async def unpin(self, stream: str, consumer: str, group: str = "") -> None:
        return await self._do(_api.unpin(stream, consumer, group))

    async def seek(
        self, stream: str, consumer: str, *, sequence: Optional[int] = None, time: Optional[datetime.datetime] = None,
        ack_floor: bool = False,
    ) -> consumer_pb2.SeekResponse:
        """As jetgate.Client.seek: exactly one of sequence, time, ack_floor=True."""
        return await self._do(_api.seek(stream, consumer, sequence, time, ack_floor))

    async def create_consumer(self, stream: str, config: _config.ConfigLike) -> consumer_pb2.CreateConsumerResponse:
        """As jetgate.Client.create_consumer: config a dict or the API's ConsumerConfig."""
        return await self._do(_api.create_consumer(stream, config))

    async def update_consumer(
        self, stream: str, consumer: str, config: _config.ConfigLike, update_mask: Union[str, Iterable[str]]
    ) -> consumer_pb2.UpdateConsumerResponse:
        """As jetgate.Client.update_consumer: the fields update_mask names."""
        return await self._do(_api.update_consumer(stream, consumer, config, update_mask))

    async def delete_consumer(self, stream: str, consumer: str) -> None:
        """As jetgate.Client.delete_consumer."""
        return await self._do(_api.delete_consumer(stream, consumer))

    async def redrive(self, stream: str, consumer: str, seqs: Optional[Iterable[int]] = None) -> RedriveResult:
        return await self._do(_api.redrive(stream, consumer, seqs))

    async def list_streams(self) -> list[stream_pb2.StreamSummary]:
        return await self._do(_api.list_streams())

    async def list_consumers(self, stream: str) -> list[consumer_pb2.ConsumerSummary]:
        return await self._do(_api.list_consumers(stream))

    async def list_leases(self, stream: str, consumer: str) -> consumer_pb2.ListLeasesResponse:
        return await self._do(_api.list_leases(stream, consumer))

    async def list_dead_letters(
        self, stream: str, consumer: str, page_size: int = 0, page_token: str = ""
    ) -> consumer_pb2.ListDeadLettersResponse:
        return await self._do(_api.list_dead_letters(stream, consumer, page_size, page_token))

    async def _settle_one(self, msg: _message.BaseMessage, op: str, arg: Any) -> None:
        name, req = _ops.request(op, msg._stream, msg._consumer, [msg.token], arg)
        try:
            resp = await self._call(getattr(self._consumers, name), req)
        except Error as e:
            raise SettleError(e.reason, e.message, e.code, msg.token) from e
        one_result(op, msg, resp)

    def subscribe(
        self,
        stream: str,
        consumer: str,
        handler: Callable[[Message], Awaitable[Any]],
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
        """Starts running handler on the consumer's messages, as tasks of the
        running loop, until the Subscriber is closed (await sub.close()).
        group, min_pending, min_ack_pending and priority: as for
        jetgate.Client.subscribe."""
        opts = Options(
            max_messages=max_messages, max_bytes=max_bytes, max_lease=max_lease, ack_batch=ack_batch,
            nak_delay=nak_delay, max_nak_delay=max_nak_delay, on_error=on_error, timeout=self._timeout,
            group=group, min_pending=min_pending, min_ack_pending=min_ack_pending, priority=priority,
        )
        return Subscriber(self, stream, consumer, handler, max_messages if concurrency is None else concurrency, opts)


class Subscriber:
    """Runs an async handler on a consumer's messages; see Client.subscribe."""

    def __init__(self, client: Client, stream: str, consumer: str, handler: Callable[..., Any], concurrency: int, opts: Options) -> None:
        self._handler = handler
        self._stream, self._consumer = stream, consumer
        self._engine = Engine(
            client._consumers, stream, consumer, client._md, opts, concurrency, self._make_msg, self._invoke
        )
        self._engine.cancel_on_nak = True
        self._engine.start()

    def _make_msg(self, h: Held, pb: Any) -> Message:
        async def settle(_m: Any, op: str, arg: Any) -> None:
            await self._engine.settle(h, op, arg)

        return Message(pb, self._stream, self._consumer, settle)

    async def _invoke(self, h: Held) -> Any:
        return await _trace.acall(self._handler, h.msg)

    @property
    def held(self) -> tuple[int, int]:
        """How many messages the subscriber holds now (in handlers or waiting
        for one), and their bytes: never more than max_messages and max_bytes."""
        return self._engine.held()

    @property
    def stats(self) -> Stats:
        return dataclasses.replace(self._engine.stats)

    async def close(self, mode: str = "drain", timeout: float = 30.0) -> None:
        """As jetgate.Subscriber.close; handlers still running after it
        returns are cancelled in nak mode and cannot settle any more. Awaited
        in one of its own handlers, it starts the close and returns at once
        (the drain then waits for that handler too); wait() says when it is
        done."""
        await self._engine.close(mode, timeout)

    async def wait(self) -> None:
        """Returns once the subscriber has stopped: closed, or failed on an
        error no retry can mend, which it raises then (as
        jetgate.Subscriber.wait; bound it with asyncio.wait_for)."""
        await self._engine.stopped.wait()
        if self._engine.failure is not None:
            raise self._engine.failure

    async def __aenter__(self) -> "Subscriber":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
