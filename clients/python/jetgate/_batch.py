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
_RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}


class Batcher:
    """Collects settles and extends by (op, arg) and sends each collection as
    one RPC when it has max_tokens tokens or has waited LINGER."""

    def __init__(self, stub: Any, stream: str, consumer: str, metadata: Any, max_tokens: int, timeout: float) -> None:
        self._stub, self._stream, self._consumer, self._md = stub, stream, consumer, metadata
        self._max = max(1, min(max_tokens, _ops.MAX_TOKENS))
        self._timeout = timeout
        self._pending: dict[Hashable, list[tuple[str, asyncio.Future]]] = {}
        self._timers: dict[Hashable, asyncio.TimerHandle] = {}
        self._inflight: set[asyncio.Task] = set()
        self.requests = 0  # RPCs sent, for the counters

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
        op, arg = key
        tokens = [t for t, _ in batch]
        name, req = _ops.request(op, self._stream, self._consumer, tokens, arg)
        loop = asyncio.get_running_loop()
        give_up = loop.time() + RETRY_FOR
        delay = 0.05
        while True:
            try:
                self.requests += 1
                resp = await getattr(self._stub, name)(req, timeout=self._timeout, metadata=self._md)
                outs: list[Any] = _ops.results(op, tokens, resp)
                break
            except grpc.RpcError as e:
                # A settle repeated after a lost reply is answered as the
                # first (the gateway's settles are idempotent), so a retry
                # while the gateway restarts is safe.
                if e.code() in _RETRYABLE and loop.time() + delay < give_up:
                    await asyncio.sleep(delay * (0.5 + random.random()))
                    delay = min(delay * 2, 1.0)
                    continue
                err = from_rpc(e)
                outs = [SettleError(err.reason, err.message, err.code, t) for t in tokens]
                break
            except asyncio.CancelledError:
                for _, f in batch:
                    if not f.done():
                        f.set_result(SettleError("SUBSCRIBER_CLOSED", "the subscriber closed before the gateway answered"))
                raise
        for (_, f), out in zip(batch, outs):
            if not f.done():
                f.set_result(out)

    async def flush_all(self) -> None:
        """Sends everything queued and waits for the answers."""
        for key in list(self._pending):
            self._flush(key)
        if self._inflight:
            await asyncio.gather(*list(self._inflight), return_exceptions=True)
