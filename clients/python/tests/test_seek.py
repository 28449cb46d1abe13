"""Seek, and consumers through the API (create, update, delete), against a
jetgate whose admin block lets callers make consumers (admin_gateway)."""

from __future__ import annotations

import asyncio
import datetime

import pytest

import jetgate
import jetgate.aio
from jetgate.v1 import consumer_pb2
from conftest import STREAM, wait_for


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


@pytest.fixture
def admin(admin_gateway):
    c = jetgate.Client(admin_gateway.grpc)
    yield c
    c.close()


def publish(c: jetgate.Client, consumer: str, *bodies: bytes) -> list[int]:
    return [c.publish(STREAM, f"orders.{consumer}", b).seq for b in bodies]


def fetch_all(c: jetgate.Client, consumer: str, n: int) -> list[jetgate.Message]:
    """Exactly n messages of the consumer, in order."""
    got: list[jetgate.Message] = []
    for _ in range(15):
        got += c.fetch(STREAM, consumer, batch=n - len(got), expires=1.0)
        if len(got) >= n:
            break
    assert len(got) == n, [m.data for m in got]
    return got


def test_seek_to_a_sequence_delivers_again_from_there(admin):
    seqs = publish(admin, "seek", b"1", b"2", b"3", b"4", b"5")
    for m in fetch_all(admin, "seek", 5):
        m.ack()
    seqs += publish(admin, "seek", b"6")
    (held,) = fetch_all(admin, "seek", 1)  # a lease from before the seek

    r = admin.seek(STREAM, "seek", sequence=seqs[2])
    assert isinstance(r, consumer_pb2.SeekResponse)
    assert r.reset_sequence == seqs[2]
    assert r.state.ack_floor.stream_seq == seqs[2] - 1 and r.state.num_pending == 4

    again = fetch_all(admin, "seek", 4)
    assert [m.data for m in again] == [b"3", b"4", b"5", b"6"]
    assert [m.metadata.stream_seq for m in again] == seqs[2:]
    # The server's reset starts the consumer afresh: each is its first
    # delivery since the seek, its count 1 again.
    assert [m.metadata.num_delivered for m in again] == [1, 1, 1, 1]
    with pytest.raises(jetgate.SettleError) as e:  # the lease from before is void
        held.ack()
    assert e.value.reason == "LEASE_EXPIRED"
    for m in again:
        m.ack()
    assert admin.get_consumer(STREAM, "seek").state.num_ack_pending == 0


def test_seek_to_a_time_delivers_what_was_stored_since(admin):
    publish(admin, "seektime", b"old1", b"old2")
    first = fetch_all(admin, "seektime", 2)
    wait_for(lambda: now() - first[-1].metadata.timestamp > datetime.timedelta(milliseconds=20), 1, "20ms")
    publish(admin, "seektime", b"new1", b"new2")
    second = fetch_all(admin, "seektime", 2)
    for m in first + second:
        m.ack()

    at = second[0].metadata.timestamp  # the first message stored at or after it
    r = admin.seek(STREAM, "seektime", time=at)
    assert r.reset_sequence == second[0].metadata.stream_seq
    again = fetch_all(admin, "seektime", 2)
    assert [m.data for m in again] == [b"new1", b"new2"]
    assert [m.metadata.num_delivered for m in again] == [1, 1]
    for m in again:
        m.ack()
    assert admin.fetch(STREAM, "seektime", expires=0.3) == []  # old1 and old2 stay acknowledged

    # A naive datetime is UTC; a time after the last message: only what comes next.
    later = admin.seek(STREAM, "seektime", time=now().replace(tzinfo=None) - datetime.timedelta(milliseconds=1))
    assert later.reset_sequence == again[-1].metadata.stream_seq + 1


def test_seek_to_the_ack_floor_delivers_everything_not_acknowledged_now(admin):
    publish(admin, "seekfloor", b"a", b"b", b"c")
    a, b, c = fetch_all(admin, "seekfloor", 3)  # ack_wait 30s: nothing comes back by itself
    a.ack()
    r = admin.seek(STREAM, "seekfloor", ack_floor=True)
    assert r.reset_sequence == b.metadata.stream_seq
    again = fetch_all(admin, "seekfloor", 2)
    assert [m.data for m in again] == [b"b", b"c"]
    for old in (b, c):
        with pytest.raises(jetgate.SettleError) as e:
            old.ack()
        assert e.value.reason == "LEASE_EXPIRED"
    for m in again:
        m.ack()


def test_seek_errors(admin):
    with pytest.raises(ValueError, match="exactly one"):
        admin.seek(STREAM, "seek", sequence=1, ack_floor=True)
    with pytest.raises(ValueError, match="exactly one"):
        admin.seek(STREAM, "seek")
    with pytest.raises(ValueError, match="1 or more"):
        admin.seek(STREAM, "seek", sequence=0)
    with pytest.raises(jetgate.Error) as e:
        admin.seek(STREAM, "seek", time=now() + datetime.timedelta(hours=1))
    assert (e.value.code, e.value.reason) == ("INVALID_ARGUMENT", "SEEK_TIME_IN_FUTURE")
    with pytest.raises(jetgate.Error) as e:
        admin.seek(STREAM, "nobody", ack_floor=True)
    assert e.value.code == "NOT_FOUND"

    # A consumer that starts at a sequence cannot go below it.
    start = publish(admin, "fromseq", b"x", b"y")[1]
    admin.create_consumer(STREAM, {
        "durable_name": "fromseq", "filter_subjects": ["orders.fromseq"],
        "deliver_policy": "by_start_sequence", "opt_start_seq": start,
    })
    try:
        with pytest.raises(jetgate.Error) as e:
            admin.seek(STREAM, "fromseq", sequence=start - 1)
        assert (e.value.code, e.value.reason) == ("INVALID_ARGUMENT", "SEEK_BELOW_START")
        assert admin.seek(STREAM, "fromseq", sequence=start).reset_sequence == start
    finally:
        admin.delete_consumer(STREAM, "fromseq")


def test_create_fetch_update_delete(admin):
    r = admin.create_consumer(STREAM, {
        "durable_name": "made", "filter_subjects": ["orders.made"], "ack_wait": 30.0, "max_deliver": 5,
        "deliver_policy": "all", "description": "made by the Python tests",
        "metadata": {"team": "py"},
    })
    assert isinstance(r, consumer_pb2.CreateConsumerResponse)
    assert r.config.durable_name == "made" and r.config.ack_policy == consumer_pb2.ACK_POLICY_EXPLICIT
    assert r.config.ack_wait.ToTimedelta() == datetime.timedelta(seconds=30) and r.config.max_deliver == 5
    # Its creator, in its metadata: "anonymous" where authentication is off, as here.
    assert r.config.metadata["team"] == "py" and r.config.metadata["jetgate.created_by"] == "anonymous"
    (listed,) = [c for c in admin.list_consumers(STREAM) if c.name == "made"]
    assert listed.created_by == "anonymous"
    with pytest.raises(jetgate.Error) as e:  # the name is taken
        admin.create_consumer(STREAM, {"durable_name": "made"})
    assert (e.value.code, e.value.reason) == ("ALREADY_EXISTS", "CONSUMER_EXISTS")

    publish(admin, "made", b"hello")
    (m,) = fetch_all(admin, "made", 1)
    assert m.data == b"hello" and m.metadata.consumer == "made"
    m.ack()

    u = admin.update_consumer(STREAM, "made", {"ack_wait": 2.0, "max_deliver": 9}, ["ack_wait", "max_deliver"])
    assert isinstance(u, consumer_pb2.UpdateConsumerResponse)
    assert u.config.ack_wait.ToTimedelta() == datetime.timedelta(seconds=2) and u.config.max_deliver == 9
    assert u.config.description == "made by the Python tests"  # not in the mask: kept
    assert admin.get_consumer(STREAM, "made").config.ack_wait.ToTimedelta() == datetime.timedelta(seconds=2)
    # The same through the generated message and a camelCase mask string.
    cfg = consumer_pb2.ConsumerConfig(description="changed")
    assert admin.update_consumer(STREAM, "made", cfg, "description").config.description == "changed"
    publish(admin, "made", b"after")
    (m,) = fetch_all(admin, "made", 1)
    left = (m.lease_deadline - now()).total_seconds()
    assert 0 < left <= 2.5, left  # new leases follow the new ack_wait
    m.ack()

    assert admin.delete_consumer(STREAM, "made") is None
    with pytest.raises(jetgate.Error) as e:
        admin.get_consumer(STREAM, "made")
    assert e.value.code == "NOT_FOUND"
    assert "made" not in {c.name for c in admin.list_consumers(STREAM)}


def test_consumer_admin_errors(admin):
    with pytest.raises(jetgate.Error) as e:  # no name
        admin.create_consumer(STREAM, {"filter_subjects": ["orders.x"]})
    assert (e.value.code, e.value.reason) == ("INVALID_ARGUMENT", "INVALID_ARGUMENT")
    assert "durable_name" in e.value.message
    for policy in ("none", "all"):  # nothing jetgate could serve with leases
        with pytest.raises(jetgate.Error) as e:
            admin.create_consumer(STREAM, {"durable_name": f"acks{policy}", "ack_policy": policy})
        assert e.value.code == "INVALID_ARGUMENT", policy
    with pytest.raises(jetgate.Error) as e:  # past the admin block's bound (1h by default)
        admin.create_consumer(STREAM, {"durable_name": "slowest", "ack_wait": 7200.0})
    assert (e.value.code, e.value.reason) == ("INVALID_ARGUMENT", "ADMIN_BOUND")
    with pytest.raises(jetgate.Error) as e:  # jetgate's own metadata is not the caller's to set
        admin.create_consumer(STREAM, {"durable_name": "forged", "metadata": {"jetgate.created_by": "someone"}})
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(ValueError, match="not a field"):
        admin.create_consumer(STREAM, {"name": "x"})
    with pytest.raises(ValueError, match="update_mask"):
        admin.update_consumer(STREAM, "seek", {"ack_wait": 5.0}, [])
    # The file's consumers are never changed or deleted through the API.
    with pytest.raises(jetgate.Error) as e:
        admin.update_consumer(STREAM, "seek", {"ack_wait": 5.0}, ["ack_wait"])
    assert (e.value.code, e.value.reason) == ("FAILED_PRECONDITION", "CONSUMER_CONFIGURED")
    with pytest.raises(jetgate.Error) as e:
        admin.delete_consumer(STREAM, "seek")
    assert (e.value.code, e.value.reason) == ("FAILED_PRECONDITION", "CONSUMER_CONFIGURED")
    assert admin.get_consumer(STREAM, "seek").config.ack_wait.ToTimedelta() == datetime.timedelta(seconds=30)
    with pytest.raises(jetgate.Error) as e:
        admin.delete_consumer(STREAM, "nobody")
    assert e.value.code == "NOT_FOUND"


def test_aio_seek_and_consumer_admin(admin_gateway):
    async def main():
        async with jetgate.aio.Client(admin_gateway.grpc) as c:
            made = await c.create_consumer(STREAM, consumer_pb2.ConsumerConfig(
                durable_name="aiomade", filter_subjects=["orders.aiomade"], ack_policy=consumer_pb2.ACK_POLICY_EXPLICIT,
            ))
            assert made.config.durable_name == "aiomade"
            first = (await c.publish(STREAM, "orders.aiomade", b"a")).seq
            await c.publish(STREAM, "orders.aiomade", b"b")
            msgs = await c.fetch(STREAM, "aiomade", batch=2, expires=5.0)
            assert [m.data for m in msgs] == [b"a", b"b"]
            for m in msgs:
                await m.ack()
            assert (await c.seek(STREAM, "aiomade", sequence=first)).reset_sequence == first
            again = await c.fetch(STREAM, "aiomade", batch=2, expires=5.0)
            assert [m.data for m in again] == [b"a", b"b"]
            for m in again:
                await m.ack()
            with pytest.raises(ValueError):
                await c.seek(STREAM, "aiomade", sequence=first, time=now())
            u = await c.update_consumer(STREAM, "aiomade", {"max_ack_pending": 7}, "maxAckPending")
            assert u.config.max_ack_pending == 7
            assert await c.delete_consumer(STREAM, "aiomade") is None
            with pytest.raises(jetgate.Error) as e:
                await c.get_consumer(STREAM, "aiomade")
            assert e.value.code == "NOT_FOUND"

    asyncio.run(main())
