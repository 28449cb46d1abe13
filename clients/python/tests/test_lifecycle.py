"""A subscriber's errors logged by default (and not with on_error), waiting
on it, using it as a context manager, stopping on an error no retry can
mend, a handler's every exception a nak, and a close that lands what its
handlers finished."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import types
import weakref
from unittest import mock

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


def test_a_handler_that_raises_any_base_exception_naks_its_message(gateway, client):
    # A CancelledError of a future the handler awaited (not the subscriber's
    # own cancel), or SystemExit from a blocking handler, is the handler's
    # failure like any other: its message is nak'ed and comes back, and the
    # subscriber, holding one message at most, goes on to the next.
    client.publish(STREAM, "orders.exits", b"first")
    seen, errors = [], []

    def exits(m):
        seen.append(m.metadata.num_delivered)
        if m.metadata.num_delivered == 1:
            sys.exit(3)

    sub = client.subscribe(STREAM, "exits", exits, max_messages=1, nak_delay=0.1, on_error=errors.append)
    try:
        wait_for(lambda: seen == [1, 2], 10, "the message again after SystemExit")
        wait_for(lambda: sub.stats.acked == 1, 10, "the redelivery acked")
    finally:
        sub.close()
    assert sub.stats.handler_errors == 1 and sub.stats.naked == 1
    assert [e.reason for e in errors] == ["HANDLER_FAILED"]

    async def main():
        async with jetgate.aio.Client(gateway.grpc) as c:
            await c.publish(STREAM, "orders.cancelled", b"first")
            twice = asyncio.Event()

            async def handler(m):
                if m.metadata.num_delivered == 1:
                    f = asyncio.get_running_loop().create_future()
                    f.cancel()  # a shared request, cancelled elsewhere
                    await f
                twice.set()

            sub = c.subscribe(STREAM, "cancelled", handler, max_messages=1, nak_delay=0.1, on_error=lambda e: None)
            try:
                await asyncio.wait_for(twice.wait(), 10)
            finally:
                await sub.close()
            assert sub.stats.handler_errors == 1 and sub.stats.naked == 1 and sub.stats.acked == 1

    asyncio.run(main())


def test_a_drain_close_lands_the_settles_of_handlers_that_finished(client):
    # A handler that finished as the close began has its ack in the
    # subscriber's batch for a few milliseconds: it is sent before the
    # stream ends (the gateway naks what an ended stream holds, and an ack
    # after that would be refused and its message delivered again).
    for i in range(3):
        client.publish(STREAM, "orders.drainacks", str(i).encode())
        handled = threading.Event()
        sub = client.subscribe(STREAM, "drainacks", lambda m: handled.set(), max_messages=1)
        try:
            wait_for(handled.is_set, 10, "the message handled")
        finally:
            sub.close(mode="drain", timeout=10)
        assert sub.stats.settle_errors == 0 and sub.stats.acked == sub.stats.handled == 1, sub.stats
    assert client.fetch(STREAM, "drainacks", batch=10, expires=0.5) == []


def test_only_the_subscribers_own_cancel_is_not_the_handlers_failure():
    # On Python 3.9 and 3.10 (no Task.cancelling) every CancelledError was
    # taken for the subscriber's own cancel, and a handler's own was
    # re-raised, its message never nak'ed. The subscriber's own cancels
    # (cancel_handlers, after a nak close) are those it made.
    from jetgate import _engine

    class Before311:  # a task as 3.9 and 3.10 have it, for this check
        pass

    async def main():
        engine = types.SimpleNamespace(_cancelled_handlers=weakref.WeakSet())
        with mock.patch.object(_engine.asyncio, "current_task", lambda: Before311()):
            assert _engine.Engine._cancelled(engine) is False
        assert _engine.Engine._cancelled(engine) is False  # 3.11 and later: not cancelling
        engine._cancelled_handlers.add(asyncio.current_task())
        assert _engine.Engine._cancelled(engine) is True

    asyncio.run(main())


def test_a_drain_lands_the_ack_of_a_handler_that_returned_during_an_extend(client):
    """A handler that returns just as the subscriber's keeper extends its
    lease: its settle waits for the message's lock behind the extend, and a
    drain that went on (a handler no longer ran) ended the stream first, so
    the gateway nak'ed the message, which ran again (a reviewer's finding,
    1 in 40). The drain now waits for the settles of finished handlers."""
    import datetime

    for i in range(10):
        client.publish(STREAM, "orders.drainextend", b"x")
        running = threading.Event()

        def handler(m):
            running.set()
            left = (m.lease_deadline - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
            time.sleep(max(0.0, left - max(left / 3, 0.05) + 0.003))  # as the keeper extends it

        sub = client.subscribe(STREAM, "drainextend", handler, max_messages=1, on_error=lambda e: None)
        assert running.wait(10)
        sub.close(mode="drain")
        assert sub.stats.acked == 1, f"round {i}: the drain ended before the finished handler's ack landed"
        again = client.fetch(STREAM, "drainextend", batch=1, expires=1.0)
        assert not again, f"round {i}: the message of a handler that finished came back"


def test_a_close_from_inside_a_handler_lets_that_handler_finish(client):
    """A handler that closes its own subscriber (stop after the message it
    was waiting for, as Pub/Sub's callbacks cancel theirs): the drain waited
    for running handlers, the calling one among them, so close blocked its
    whole timeout and then nak'ed the message that handler had handled, which
    came back (a message handled twice). close from a handler now starts the
    close and returns; the drain lets that handler finish and acks it."""
    for i in range(5):
        client.publish(STREAM, "orders.closeinside", str(i).encode())
    ready, took, handled = threading.Event(), [], []

    def handler(m):
        ready.wait(10)
        if not handled:
            handled.append(m.metadata.stream_seq)
            t0 = time.monotonic()
            sub.close(timeout=20)
            took.append(time.monotonic() - t0)

    sub = client.subscribe(STREAM, "closeinside", handler, max_messages=5, concurrency=1, on_error=lambda e: None)
    ready.set()
    assert sub.wait(30)
    assert took and took[0] < 5, f"close inside the handler blocked {took}"
    assert sub.stats.acked == 1 and sub.stats.settle_errors == 0, sub.stats
    again = client.fetch(STREAM, "closeinside", batch=10, expires=1.0)
    for m in again:
        m.ack()
    assert len(again) == 4 and handled[0] not in [m.metadata.stream_seq for m in again], (handled, again)


def test_aio_close_from_inside_a_handler_lets_that_handler_finish(gateway):
    async def main():
        async with jetgate.aio.Client(gateway.grpc) as client:
            for i in range(5):
                await client.publish(STREAM, "orders.aiocloseinside", str(i).encode())
            took, handled, box = [], [], []
            ready = asyncio.Event()

            async def handler(m):
                await ready.wait()
                if not handled:
                    handled.append(m.metadata.stream_seq)
                    t0 = time.monotonic()
                    await box[0].close(timeout=20)
                    took.append(time.monotonic() - t0)

            sub = client.subscribe(STREAM, "aiocloseinside", handler, max_messages=5, concurrency=1, on_error=lambda e: None)
            box.append(sub)
            ready.set()
            await asyncio.wait_for(sub.wait(), 30)
            assert took and took[0] < 5, f"close inside the handler blocked {took}"
            assert sub.stats.acked == 1 and sub.stats.settle_errors == 0, sub.stats
            again = await client.fetch(STREAM, "aiocloseinside", batch=10, expires=1.0)
            for m in again:
                await m.ack()
            assert len(again) == 4 and handled[0] not in [m.metadata.stream_seq for m in again], (handled, again)

    asyncio.run(main())


def test_a_coroutine_handler_on_the_blocking_subscriber_acks_nothing_unrun(client):
    """An async def handler given to the blocking client (jetgate.aio's is
    the one for coroutines): each call returned a coroutine that nothing
    awaited, so the subscriber acked every message without running the
    handler's body (messages lost). subscribe now refuses a coroutine
    function, and a handler that returns an awaitable anyway fails: its
    message is nak'ed, not acked."""
    ran = []

    async def handler(m):
        ran.append(m.data)

    with pytest.raises(TypeError, match="jetgate.aio"):
        client.subscribe(STREAM, "asynchandler", handler)

    client.publish(STREAM, "orders.asynchandler", b"work")
    errors = []
    sub = client.subscribe(STREAM, "asynchandler", lambda m: handler(m), on_error=errors.append, nak_delay=0.0)
    try:
        wait_for(lambda: sub.stats.handler_errors >= 1, 10, "the handler's failure")
    finally:
        sub.close(mode="nak")
    assert sub.stats.acked == 0, sub.stats
    assert isinstance(errors[0], jetgate.HandlerError) and isinstance(errors[0].__cause__, TypeError), errors
    back = client.fetch(STREAM, "asynchandler", expires=2.0)
    assert [m.data for m in back] == [b"work"], "the message was acked without its handler running"
    back[0].ack()


def test_a_close_from_on_error_does_not_hang_the_subscriber(client):
    """on_error runs on the blocking subscriber's own event loop thread; an
    on_error that closed the subscriber (stop at the first failure) blocked
    that thread waiting for a close only it could run: the subscriber hung
    (no extends, no settles, wait() never returned), and after timeout + 60s
    close tried to join its own thread. close from there now starts the
    close and returns."""
    client.publish(STREAM, "orders.closeonerror", b"bad")
    ready, seen = threading.Event(), []

    def on_error(e):
        t0 = time.monotonic()
        try:
            sub.close(timeout=5)
            seen.append(time.monotonic() - t0)
        except Exception as x:  # noqa: BLE001 - what the test looks for
            seen.append(x)

    def handler(m):
        ready.wait(10)
        raise RuntimeError("boom")

    sub = client.subscribe(STREAM, "closeonerror", handler, on_error=on_error)
    ready.set()
    assert sub.wait(15), f"the subscriber hung after on_error closed it: {seen}"
    assert len(seen) == 1 and isinstance(seen[0], float) and seen[0] < 2, seen
    assert sub.stats.naked == 1 and sub.stats.acked == 0, sub.stats
    back = client.fetch(STREAM, "closeonerror", expires=3.0)
    assert [m.data for m in back] == [b"bad"]
    back[0].ack()
