"""Batched settles: tokens of the same kind that come within a few
milliseconds go in one request, and each caller gets its own token's result."""

from __future__ import annotations

import asyncio
import random
from typing import Any, Hashable

import grpc

from jetgate import _ops
from jetgate._errors import SettleError, from_rpc

LINGER = 0.005  # seconds a settle waits for others to share its request
RETRY_FOR = 10.0  # seconds a request is retried while the gateway is unavailable
_RETRYABLE_NAMES = {"UNAVAILABLE", "DEADLINE_EXCEEDED"}


class Batcher:
    """Collects settles and extends by (op, arg) and sends each collection as
    one RPC when it has max_tokens tokens or has waited LINGER."""

    def __init__(self, stub: Any, stream: str, consumer: str, metadata: Any, max_tokens: int, timeout: float, stats: Any) -> None:
        self._stub, self._stream, self._consumer, self._md = stub, stream, consumer, metadata
        self._max = max(1, min(max_tokens, _ops.MAX_TOKENS))
        self._timeout = timeout
        self._pending: dict[Hashable, list[tuple[str, asyncio.Future]]] = {}
        self._timers: dict[Hashable, asyncio.TimerHandle] = {}
        self._inflight: set[asyncio.Task] = set()
        self.stats = stats  # settle_requests counts the RPCs

    async def submit(self, op: str, arg: Any, token: str) -> "SettleError | _ops.Extended | None":
        """Queues one token and returns its outcome: None when settled, an
        Extended for an extend, or a SettleError (also for a failed RPC)."""
        key = (op, arg)
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        batch = self._pending.setdefault(key, [])
        batch.append((token, fut))
        if len(batch) >= self._max:
            self._flush(key)
        elif key not in self._timers:
            self._timers[key] = asyncio.get_running_loop().call_later(LINGER, self._flush, key)
        return await fut

    def _flush(self, key: Hashable) -> None:
        t = self._timers.pop(key, None)
        if t is not None:
            t.cancel()
        batch = self._pending.pop(key, None)
        if batch:
            task = asyncio.get_running_loop().create_task(self._send(key, batch))
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)

    async def _send(self, key: Hashable, batch: list[tuple[str, asyncio.Future]]) -> None:
        """Sends one collection; what fails because the gateway or NATS is
        unavailable (the whole RPC, or single tokens) is sent again for up to
        RETRY_FOR. A settle repeated after a lost reply is answered as the
        first (the gateway's settles are idempotent), so this is safe."""
        op, arg = key
        loop = asyncio.get_running_loop()
        give_up = loop.time() + RETRY_FOR
        delay = 0.05
        todo = batch
        try:
            while todo:
                outs = await self._once(op, arg, [t for t, _ in todo])
                retry = []
                for (t, f), out in zip(todo, outs):
                    if isinstance(out, SettleError) and out.code in _RETRYABLE_NAMES and loop.time() + delay < give_up:
                        retry.append((t, f))
                    elif not f.done():
                        f.set_result(out)
                todo = retry
                if todo:
                    await asyncio.sleep(delay * (0.5 + random.random()))
                    delay = min(delay * 2, 1.0)
        except asyncio.CancelledError:
            for _, f in batch:
                if not f.done():
                    f.set_result(SettleError("SUBSCRIBER_CLOSED", "the subscriber closed before the gateway answered", code="CANCELLED"))
            raise

    async def _once(self, op: str, arg: Any, tokens: list[str]) -> list[Any]:
        name, req = _ops.request(op, self._stream, self._consumer, tokens, arg)
        self.stats.settle_requests += 1
        try:
            resp = await getattr(self._stub, name)(req, timeout=self._timeout, metadata=self._md)
        except grpc.RpcError as e:
            err = from_rpc(e)
            return [SettleError(err.reason, err.message, err.code, t) for t in tokens]
        return _ops.results(op, tokens, resp)

    async def flush_all(self) -> None:
        """Sends everything queued and waits for the answers."""
        for key in list(self._pending):
            self._flush(key)
        if self._inflight:
            await asyncio.gather(*list(self._inflight), return_exceptions=True)
