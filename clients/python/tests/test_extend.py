"""Extend by a duration: kept alive that long, 0 gives the message back, the
gateway's limits.max_lease (1h by default) bounds it."""

from __future__ import annotations

import datetime
import threading
import time

import grpc
import pytest

import jetgate
from jetgate.v1 import consumer_pb2, consumer_pb2_grpc
from conftest import STREAM, wait_for


def now_utc() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def holders(gateway, consumer):
    with grpc.insecure_channel(gateway.grpc) as ch:
        stub = consumer_pb2_grpc.ConsumerServiceStub(ch)
        return list(stub.ListLeases(consumer_pb2.ListLeasesRequest(stream=STREAM, consumer=consumer), timeout=10).holders)


def test_extend_by_several_ack_waits_keeps_the_lease(client, gateway):
    # ack_wait is 1s: the lease lives past it only because the gateway keeps it.
    client.publish(STREAM, "orders.keep", b"k")
    (m,) = client.fetch(STREAM, "keep", expires=2.0)
    first_token, first_deadline = m.token, m.lease_deadline
    asked = now_utc()
    m.extend(duration=4.0)
    assert m.token != first_token
    want = asked + datetime.timedelta(seconds=4)
    assert want - datetime.timedelta(milliseconds=50) <= m.lease_deadline <= now_utc() + datetime.timedelta(seconds=4)
    (h,) = holders(gateway, "keep")
    assert h.kept == 1 and h.leases == 1
    assert h.latest_deadline.ToDatetime(tzinfo=datetime.timezone.utc) == m.lease_deadline
    # Three ack_waits: the server redelivers nothing meanwhile.
    assert client.fetch(STREAM, "keep", expires=3.0) == []
    assert now_utc() > first_deadline + datetime.timedelta(seconds=2)
    m.ack()
    st = client.get_consumer(STREAM, "keep").state
    assert st.num_ack_pending == 0 and st.num_redelivered == 0


def test_extend_by_zero_gives_the_message_back(client):
    client.publish(STREAM, "orders.giveback", b"g")
    (m,) = client.fetch(STREAM, "giveback", expires=2.0)
    token = m.token
    t0 = time.monotonic()
    m.extend(duration=0)
    m.extend(duration=0)  # the same give-back again is answered as the first
    assert m.token == token  # no new token: the lease is over
    assert m.lease_deadline <= now_utc() + datetime.timedelta(milliseconds=50)
    (again,) = client.fetch(STREAM, "giveback", expires=5.0)
    assert time.monotonic() - t0 < 5.0  # at once, not after the 30s ack_wait
    assert again.metadata.stream_seq == m.metadata.stream_seq and again.metadata.num_delivered == 2
    with pytest.raises(jetgate.SettleError) as e:
        m.ack()  # the token given back settles nothing
    assert e.value.reason in ("LEASE_SETTLED", "LEASE_EXPIRED")  # expired: a newer delivery replaced it
    again.ack()
    wait_for(lambda: client.get_consumer(STREAM, "giveback").state.num_ack_pending == 0, 5, "ack pending 0")


def test_extend_past_max_lease_or_negative_is_invalid_argument(client):
    client.publish(STREAM, "orders.giveback", b"too long")
    (m,) = client.fetch(STREAM, "giveback", expires=2.0)
    token, deadline = m.token, m.lease_deadline
    for d in (2 * 3600.0, -1.0):
        with pytest.raises(jetgate.SettleError) as e:
            m.extend(duration=d)
        assert e.value.code == "INVALID_ARGUMENT", e.value
        assert e.value.token == token
    assert (m.token, m.lease_deadline) == (token, deadline)  # nothing moved
    m.ack()  # the lease is as it was


def test_subscriber_handler_extends_by_a_duration(client):
    # ack_wait 2s; the handler asks for 6s and works 4s: the subscriber's
    # keeper leaves the kept lease alone (one extend in all), no redelivery.
    client.publish(STREAM, "orders.keepsub", b"long")
    calls, deadlines = [], []

    def handler(m):
        calls.append(m.metadata.num_delivered)
        asked = now_utc()
        m.extend(duration=6.0)
        deadlines.append((asked, m.lease_deadline))
        time.sleep(4)  # the handler's work, past two ack_waits

    sub = client.subscribe(STREAM, "keepsub", handler)
    try:
        wait_for(lambda: sub.stats.acked == 1, 20, "the kept message acked")
    finally:
        sub.close()
    assert calls == [1]
    asked, dl = deadlines[0]
    assert dl >= asked + datetime.timedelta(seconds=5.9)
    assert sub.stats.extended == 1 and sub.stats.settle_errors == 0 and sub.stats.leases_lost == 0
    st = client.get_consumer(STREAM, "keepsub").state
    assert st.num_ack_pending == 0 and st.num_redelivered == 0


def test_subscriber_handler_gives_a_message_back_by_extend_zero(client):
    client.publish(STREAM, "orders.givebacksub", b"back")
    calls = []
    done = threading.Event()
    errors = []

    def handler(m):
        calls.append(m.metadata.num_delivered)
        if m.metadata.num_delivered == 1:
            m.extend(duration=0)  # back now; returning after it acks nothing
            with pytest.raises(jetgate.SettleError) as e:
                m.ack()
            assert e.value.reason == "ALREADY_SETTLED" and e.value.code == "FAILED_PRECONDITION"
        else:
            done.set()

    sub = client.subscribe(STREAM, "givebacksub", handler, on_error=errors.append)
    try:
        wait_for(lambda: done.is_set() and sub.stats.acked == 1, 15, "the message given back and handled again")
    finally:
        sub.close()
    assert calls == [1, 2]
    assert sub.stats.naked == 1 and sub.stats.handler_errors == 0 and sub.stats.settle_errors == 0, sub.stats
    assert errors == []
    assert client.get_consumer(STREAM, "givebacksub").state.num_ack_pending == 0


def test_aio_extend_by_a_duration_and_by_zero(gateway):
    import asyncio

    import jetgate.aio

    async def main():
        async with jetgate.aio.Client(gateway.grpc) as c:
            await c.publish(STREAM, "orders.giveback", b"aio")
            (m,) = await c.fetch(STREAM, "giveback", expires=2.0)
            old = m.token
            asked = now_utc()
            await m.extend(duration=40.0)  # past the 30s ack_wait: kept alive
            assert m.token != old
            assert asked + datetime.timedelta(seconds=39.9) <= m.lease_deadline <= now_utc() + datetime.timedelta(seconds=40)
            await m.extend(duration=0)
            (again,) = await c.fetch(STREAM, "giveback", expires=5.0)
            assert again.metadata.stream_seq == m.metadata.stream_seq and again.metadata.num_delivered == 2
            await again.ack()

    asyncio.run(main())
