"""The Consume streams of a subscriber: opened within the room its limits
leave, read until they break, opened again with backoff."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any, Optional

import grpc

from jetgate import _message
from jetgate._errors import StreamError, from_rpc
from jetgate._held import Conn
from jetgate.v1 import consumer_pb2

HEARTBEAT = 5.0  # seconds between the gateway's heartbeats on an idle stream
SILENCE = 3 * HEARTBEAT  # a stream that says nothing this long is dead
BACKOFF_MIN, BACKOFF_MAX = 0.1, 5.0
# Codes of a stream that ends before its first answer that no retry can
# mend: the subscriber stops on them (wait() raises the error).
FATAL_ON_OPEN = {"NOT_FOUND", "PERMISSION_DENIED", "UNAUTHENTICATED", "INVALID_ARGUMENT", "UNIMPLEMENTED"}


# auto_extend: the gateway keeps a stream's leases alive itself too (up to
# its own maximum, an hour). The subscriber extends every lease anyway, for
# the new token after each Extend and for leases of a stream that broke; but
# today the gateway counts a stream's room by the deadlines it set, so without
# auto_extend it would take an Extend made by the client as an expiry and
# hand the stream more than max_messages while slow handlers run.


class Streams:
    """Keeps one Consume stream open whenever there is room, and a second one
    for the room that frees up while an ended stream's leases are finished
    (the room of an ended stream is what it still holds). So the windows of
    the streams and the leases of ended ones never add up to more than
    max_messages (and max_bytes).

    Of a pinned_client group, the pin is the subscriber's: each stream opens
    with the last pin any of them was given, so that one opened again (the
    gateway restarted, a blip) keeps it rather than wait out the group's
    priority_timeout while the server holds the pin for a stream that is
    gone. A stream that ends PIN_ID_MISMATCH (unpinned, or the pin timed
    out) lets it go: the next opens without one, to be pinned again."""

    def __init__(self, engine: Any, stub: Any, metadata: Any) -> None:
        self._engine, self._stub, self._md = engine, stub, metadata
        self.conns: list[Conn] = []
        self._wake = asyncio.Event()
        self._task: Optional[asyncio.Task] = None
        self._readers: set[asyncio.Task] = set()
        self._backoff = BACKOFF_MIN
        self._next_try = 0.0
        self._stopping = False
        self.pin = ""

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._manage())

    def changed(self) -> None:
        """Room was given back or a stream ended."""
        self.conns = [c for c in self.conns if c.alive or c.count > 0]
        self._wake.set()

    async def stop(self) -> None:
        self._stopping = True  # _manage stops by this flag (see Engine.close)
        self._wake.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        for c in self.conns:
            if c.call is not None:
                c.call.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)

    def _want(self) -> tuple[int, Optional[int]]:
        """The window of a stream to open now, or (0, None)."""
        e = self._engine
        free_n, free_b = e.free()
        alive = any(c.alive for c in self.conns)
        max_n, max_b = e.opts.max_messages, e.opts.max_bytes
        need_n = max(1, max_n // 2) if alive else 1
        need_b = 1 if max_b is None else (max(1, max_b // 2) if alive else 1)
        if free_n >= need_n and (free_b is None or free_b >= need_b):
            return free_n, free_b
        return 0, None

    async def _manage(self) -> None:
        while not self._stopping:
            now = time.monotonic()
            n, b = self._want()
            if n > 0 and now >= self._next_try:
                self._open(n, b)
                continue
            for c in self.conns:  # a stream that has gone silent is dead
                if c.alive and c.call is not None and now - c.last_response > SILENCE:
                    c.call.cancel()
            self._wake.clear()
            wait = HEARTBEAT if n == 0 else max(0.0, self._next_try - now)
            try:
                await asyncio.wait_for(self._wake.wait(), wait)
            except asyncio.TimeoutError:
                pass

    def _open(self, window: int, window_bytes: Optional[int]) -> None:
        e = self._engine
        c = Conn(window, window_bytes)
        o = e.opts
        c.pin = self.pin
        req = consumer_pb2.ConsumeRequest(
            stream=e.stream, consumer=e.consumer, max_messages=window,
            heartbeat=_message.duration(HEARTBEAT), auto_extend=True, group=o.group,
            min_pending=o.min_pending, min_ack_pending=o.min_ack_pending, priority=o.priority, pin_id=c.pin,
        )
        if window_bytes is not None:
            req.max_bytes = window_bytes
        c.call = self._stub.Consume(req, metadata=self._md)
        self.conns.append(c)
        t = asyncio.get_running_loop().create_task(self._read(c))
        self._readers.add(t)
        t.add_done_callback(self._readers.discard)

    async def _read(self, c: Conn) -> None:
        err: Optional[BaseException] = None
        try:
            async for resp in c.call:
                c.last_response = time.monotonic()
                c.heard = True
                self._backoff = BACKOFF_MIN
                if resp.pin_id:
                    self.pin = c.pin = resp.pin_id
                for m in resp.messages:
                    self._engine.receive(c, m)
        except grpc.RpcError as ex:
            err = ex
        except asyncio.CancelledError:
            pass
        finally:
            c.alive = False
            if not self._stopping:
                self._broke(c, err)
            self.changed()

    def _too_large(self, c: Conn, x: StreamError) -> bool:
        """Whether the stream ended on a message larger than max_bytes itself
        (its window was the whole limit): no stream could ever take it."""
        most = self._engine.opts.max_bytes
        return x.reason == "MESSAGE_TOO_LARGE" and most is not None and (c.window_bytes or 0) >= most

    def _broke(self, c: Conn, err: Optional[BaseException]) -> None:
        e = self._engine
        if isinstance(err, grpc.RpcError):
            x = from_rpc(err, StreamError)
        else:
            x = StreamError("STREAM_ENDED", "the gateway ended the Consume stream")
        if x.reason == "PIN_ID_MISMATCH" and self.pin == c.pin:
            self.pin = ""  # lost: the next stream waits to be pinned again
        elif not c.heard and x.code == "INVALID_ARGUMENT" and c.pin:
            # A pin the consumer takes no more (its policy was changed from
            # pinned_client): let go, and tried once more without it before
            # the error stops the subscriber (another stream may have let
            # it go already).
            if self.pin == c.pin:
                self.pin = ""
        elif not c.heard and x.code in FATAL_ON_OPEN or self._too_large(c, x):
            self._stopping = True  # no stream opens again
            e.fail(x)
            e._report(x)
            return
        e.stats.reconnects += 1
        self._next_try = time.monotonic() + self._backoff * (0.5 + random.random() / 2)
        self._backoff = min(self._backoff * 2, BACKOFF_MAX)
        e._report(x)
