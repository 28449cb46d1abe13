"""A subscriber's errors logged by default (and not with on_error), waiting
on it, using it as a context manager, and stopping on an error no retry can
mend."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest

import jetgate
import jetgate.aio
from conftest import STREAM, wait_for


def records(caplog, level=logging.WARNING):
    return [r for r in caplog.records if r.name == "jetgate" and r.levelno >= level]


def test_handler_errors_and_dropped_leases_are_logged_without_on_error(client, caplog):
    caplog.set_level(logging.INFO, logger="jetgate")
    client.publish(STREAM, "orders.logs", b"fails once")
    client.publish(STREAM, "orders.logdrop", b"held too long")
    release = threading.Event()

    def handler(m):
        if m.data == b"fails once" and m.metadata.num_delivered == 1:
            raise RuntimeError("boom")
        if m.data == b"held too long" and m.metadata.num_delivered == 1:
            release.wait(10)

    subs = [
        client.subscribe(STREAM, "logs", handler, nak_delay=0.1),
        client.subscribe(STREAM, "logdrop", handler, max_lease=1.0),
    ]
    try:
        wait_for(lambda: subs[0].stats.acked == 1 and subs[1].stats.leases_dropped == 1, 15, "a retry and a drop")
    finally:
        release.set()
        for s in subs:
            s.close()
    failed = [r for r in records(caplog, logging.ERROR) if "HANDLER_FAILED" in r.getMessage()]
    assert len(failed) == 1 and "ORDERS/logs" in failed[0].getMessage()
    assert failed[0].exc_info and isinstance(failed[0].exc_info[1], RuntimeError)  # the traceback is logged
    dropped = [r for r in records(caplog) if "MAX_LEASE" in r.getMessage()]
    assert len(dropped) == 1 and dropped[0].levelno == logging.WARNING and "ORDERS/logdrop" in dropped[0].getMessage()


def test_on_error_silences_the_log_and_its_own_failure_is_logged(client, caplog):
    caplog.set_level(logging.INFO, logger="jetgate")
    client.publish(STREAM, "orders.logs", b"fails once")
    seen = []

    def handler(m):
        if m.metadata.num_delivered == 1:
            raise RuntimeError("boom")

    sub = client.subscribe(STREAM, "logs", handler, nak_delay=0.1, on_error=seen.append)
    try:
        wait_for(lambda: sub.stats.acked == 1, 10, "the retry acked")
    finally:
        sub.close()
    assert [type(e) for e in seen] == [jetgate.HandlerError] and records(caplog, logging.DEBUG) == []

    def bad_callback(err):
        raise ValueError("the callback's own bug")

    client.publish(STREAM, "orders.logs", b"fails once")
    sub = client.subscribe(STREAM, "logs", handler, nak_delay=0.1, on_error=bad_callback)
    try:
        wait_for(lambda: sub.stats.acked == 1, 10, "the retry acked")
    finally:
        sub.close()
    (r,) = records(caplog, logging.ERROR)
    assert "on_error raised" in r.getMessage() and isinstance(r.exc_info[1], ValueError)


def test_wait_and_the_context_manager(client):
    client.publish(STREAM, "orders.waits", b"x")
    handled = threading.Event()
    with client.subscribe(STREAM, "waits", lambda m: handled.set()) as sub:
        assert sub.wait(timeout=0.1) is False  # still running
        assert handled.wait(10)
        threading.Timer(0.2, sub.close).start()  # as a signal handler or another thread would
        t0 = time.monotonic()
        assert sub.wait() is True
        assert time.monotonic() - t0 < 5
    assert sub.stats.acked == 1 and sub.wait(0) is True
    sub.close()  # again: nothing


def test_subscriber_of_an_unknown_consumer_fails_and_wait_raises(client, caplog):
    caplog.set_level(logging.INFO, logger="jetgate")
    t0 = time.monotonic()
    sub = client.subscribe(STREAM, "nobody", lambda m: None)
    with pytest.raises(jetgate.StreamError) as e:
        sub.wait(timeout=10)
    assert time.monotonic() - t0 < 5
    assert e.value.code == "NOT_FOUND" and sub.stats.reconnects == 0
    (r,) = records(caplog, logging.ERROR)
    assert "ORDERS/nobody" in r.getMessage()
    sub.close()  # after it failed: nothing to do


def test_aio_wait_context_manager_and_failure(gateway, caplog):
    caplog.set_level(logging.INFO, logger="jetgate")

    async def main():
        async with jetgate.aio.Client(gateway.grpc) as c:
            await c.publish(STREAM, "orders.waits", b"y")
            handled = asyncio.Event()

            async def handler(m):
                handled.set()

            async with c.subscribe(STREAM, "waits", handler) as sub:
                await asyncio.wait_for(handled.wait(), 10)
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(sub.wait()), 0.1)
                asyncio.get_running_loop().call_later(0.1, lambda: asyncio.ensure_future(sub.close()))
                await asyncio.wait_for(sub.wait(), 5)
            assert sub.stats.acked == 1

            bad = c.subscribe(STREAM, "nobody", handler)
            with pytest.raises(jetgate.StreamError) as e:
                await asyncio.wait_for(bad.wait(), 10)
            assert e.value.code == "NOT_FOUND"
            await bad.close()

    asyncio.run(main())
    assert any("ORDERS/nobody" in r.getMessage() for r in records(caplog, logging.ERROR))
