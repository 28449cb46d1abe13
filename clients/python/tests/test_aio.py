"""jetgate.aio: the asyncio client and subscriber, and trace context."""

from __future__ import annotations

import asyncio
import time

import pytest

import jetgate
import jetgate.aio
from jetgate import _trace
from conftest import STREAM


async def until(cond, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)


def test_aio_client_and_subscriber(gateway):
    async def main():
        async with jetgate.aio.Client(gateway.grpc) as c:
            ack = await c.publish(STREAM, "orders.aio", b"first", headers={"k": ["v1", "v2"]})
            (m,) = await c.fetch(STREAM, "aio", batch=5, expires=2.0)
            assert m.metadata.stream_seq == ack.seq and m.headers == {"k": ["v1", "v2"]}
            old, old_deadline = m.token, m.lease_deadline
            # A token carries its deadline to the millisecond, and an extend
            # in the same millisecond as the fetch gives the same deadline, so
            # the same token: extend a few milliseconds later.
            fetched = time.monotonic()
            await until(lambda: time.monotonic() - fetched > 0.005, 1, "5ms")
            await m.extend()
            assert m.token != old and m.lease_deadline > old_deadline
            await m.ack()
            with pytest.raises(jetgate.SettleError) as e:
                await m.term("late")
            assert e.value.reason == "LEASE_SETTLED"

            for i in range(20):
                await c.publish(STREAM, "orders.aio", b"%d" % i)
            running, peak, seen = [0], [0], []

            async def handler(msg):
                running[0] += 1
                peak[0] = max(peak[0], running[0])
                await asyncio.sleep(0.05)
                running[0] -= 1
                if msg.data == b"7" and msg.metadata.num_delivered == 1:
                    raise RuntimeError("once")
                seen.append(msg.data)

            sub = c.subscribe(STREAM, "aio", handler, max_messages=5, nak_delay=0.1)
            await until(lambda: len(seen) == 20, 15, "20 handled")
            await sub.close()
            assert peak[0] <= 5 and sub.stats.naked == 1 and sub.stats.acked == 20
            assert sub.held == (0, 0)
            assert (await c.get_consumer(STREAM, "aio")).state.num_ack_pending == 0

    asyncio.run(main())


def test_aio_close_nak_cancels_handlers(gateway):
    async def main():
        async with jetgate.aio.Client(gateway.grpc) as c:
            for _ in range(10):
                await c.publish(STREAM, "orders.aio", b"n")
            started, cancelled = [], []

            async def handler(msg):
                started.append(msg)
                try:
                    await asyncio.sleep(60)
                except asyncio.CancelledError:
                    cancelled.append(msg)
                    raise

            sub = c.subscribe(STREAM, "aio", handler, max_messages=4)
            await until(lambda: len(started) == 4, 10, "4 handlers")
            t0 = time.monotonic()
            await sub.close(mode="nak", timeout=5)
            assert time.monotonic() - t0 < 2 and sub.stats.naked == 4
            await until(lambda: len(cancelled) == 4, 5, "the handlers cancelled")
            rest = []
            while len(rest) < 10:
                got = await c.fetch(STREAM, "aio", batch=10, expires=1.0)
                assert got, "the nak'ed messages come back at once"
                for m in got:
                    await m.ack()
                rest += got
            assert sum(m.metadata.num_delivered == 2 for m in rest) == 4

    asyncio.run(main())


@pytest.mark.skipif(not _trace.AVAILABLE, reason="opentelemetry is not installed (optional; no Debian package here)")
def test_trace_context_reaches_the_handler(client):
    from opentelemetry import trace

    trace_id = "0af7651916cd43dd8448eb211c80319c"
    client.publish(STREAM, "orders.trace", b"t", headers={"traceparent": f"00-{trace_id}-b7ad6b7169203331-01"})
    seen = []

    def handler(m):
        seen.append(format(trace.get_current_span().get_span_context().trace_id, "032x"))

    sub = client.subscribe(STREAM, "trace", handler)
    try:
        end = time.monotonic() + 10
        while not seen and time.monotonic() < end:
            time.sleep(0.02)
    finally:
        sub.close()
    assert seen == [trace_id]
