"""The rest of the API through the client's own calls: a message's ttl,
atomic batches, why a fetch is empty, pause and resume, priority-group pins
and unpin, dead letters and redrive, and the listings."""

from __future__ import annotations

import asyncio
import datetime

import pytest

import jetgate
import jetgate.aio
from conftest import CONSUMERS, STREAM, wait_for


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def test_publish_with_ttl_and_an_atomic_batch(client):
    first = client.publish(STREAM, "orders.batchpub", b"t", ttl=60.0)
    ack = client.publish_batch(STREAM, [
        ("orders.batchpub", b"a"),
        jetgate.BatchMessage("orders.batchpub", b"b", headers={"k": ["v1", "v2"]}),
        ("orders.batchpub", b"c", None, 60.0),
    ])
    assert isinstance(ack, jetgate.BatchAck) and ack.stream == STREAM
    assert ack.seqs == [first.seq + 1, first.seq + 2, first.seq + 3]
    msgs = client.fetch(STREAM, "batchpub", batch=10, expires=2.0)
    assert [m.data for m in msgs] == [b"t", b"a", b"b", b"c"]
    assert msgs[2].headers["k"] == ["v1", "v2"] and msgs.empty_reason == ""
    for m in msgs:
        m.ack()
    with pytest.raises(jetgate.Error) as e:  # a batch of none is refused, nothing stored
        client.publish_batch(STREAM, [])
    assert e.value.code == "INVALID_ARGUMENT"


def test_fetch_says_why_it_is_empty_and_pause_resume(client):
    empty = client.fetch(STREAM, "admin", expires=0.2)
    assert empty == [] and isinstance(empty, jetgate.FetchResult) and empty.empty_reason == "NO_MESSAGES"

    st = client.pause(STREAM, "admin", duration=60.0)
    assert st.paused and now() + datetime.timedelta(seconds=50) < st.pause_until < now() + datetime.timedelta(seconds=70)
    assert client.get_consumer(STREAM, "admin").state.paused
    (summary,) = [c for c in client.list_consumers(STREAM) if c.name == "admin"]
    assert summary.paused
    client.publish(STREAM, "orders.admin", b"held back")
    paused = client.fetch(STREAM, "admin", expires=0.3)
    assert paused == [] and paused.empty_reason == "PAUSED"

    until = now() + datetime.timedelta(hours=1)
    st = client.pause(STREAM, "admin", until)
    assert st.paused and abs((st.pause_until - until).total_seconds()) < 1

    st = client.resume(STREAM, "admin")
    assert st == jetgate.PauseState(False, None)
    (m,) = client.fetch(STREAM, "admin", expires=5.0)
    assert m.data == b"held back"
    m.ack()
    with pytest.raises(ValueError):
        client.pause(STREAM, "admin")  # neither until nor duration


def test_pin_of_a_pinned_client_group_and_unpin(client):
    for body in (b"1", b"2", b"3"):
        client.publish(STREAM, "orders.pinned", body)
    first = client.fetch(STREAM, "pinned", expires=2.0)
    assert [m.data for m in first] == [b"1"] and first.pin_id
    others = client.fetch(STREAM, "pinned", expires=0.5)  # without the pin
    assert others == [] and others.empty_reason == "PINNED"
    second = client.fetch(STREAM, "pinned", expires=2.0, pin_id=first.pin_id)
    assert [m.data for m in second] == [b"2"]
    (group,) = client.get_consumer(STREAM, "pinned").state.priority_groups
    assert group.group == "main" and group.pinned

    assert client.unpin(STREAM, "pinned", group="main") is None
    wait_for(lambda: not client.get_consumer(STREAM, "pinned").state.priority_groups[0].pinned, 5, "the group unpinned")
    third = client.fetch(STREAM, "pinned", expires=2.0)  # another caller may take the pin now
    assert [m.data for m in third] == [b"3"] and third.pin_id and third.pin_id != first.pin_id
    for m in first + second + third:
        m.ack()


def test_dead_letters_listed_and_redriven(client):
    client.publish(STREAM, "orders.dlq", b"poison", headers={"X-Order": "7"})
    (m,) = client.fetch(STREAM, "dlq", expires=2.0)
    m.term("bad input")  # on_term: a dead letter
    page = wait_for(
        lambda: (p := client.list_dead_letters(STREAM, "dlq")).total == 1 and p, 15, "the dead letter stored"
    )
    (dl,) = page.dead_letters
    assert dl.subject == "orders.dlq" and dl.reason == "TERM" and dl.data_preview == b"poison"
    assert dl.stream_seq == m.metadata.stream_seq and dl.headers["X-Order"].values == ["7"]
    assert page.next_page_token == ""
    assert client.get_consumer(STREAM, "dlq").dead_letters == 1

    missing = client.redrive(STREAM, "dlq", [dl.seq + 1000])
    assert missing.redriven == 0
    assert [(f.seq, f.code, f.reason) for f in missing.failures] == [(dl.seq + 1000, "NOT_FOUND", "DEAD_LETTER_NOT_FOUND")]
    done = client.redrive(STREAM, "dlq", [dl.seq])
    assert done == jetgate.RedriveResult(1, [])
    (again,) = client.fetch(STREAM, "dlq", expires=5.0)  # back on its subject, a new message
    assert again.data == b"poison" and again.metadata.stream_seq > m.metadata.stream_seq
    again.ack()
    assert client.list_dead_letters(STREAM, "dlq").total == 0
    with pytest.raises(jetgate.Error) as e:  # a consumer without dead_letter
        client.redrive(STREAM, "admin")
    assert e.value.reason == "NO_DEAD_LETTER"


def test_listings(client):
    (orders,) = [s for s in client.list_streams() if s.name == STREAM]
    assert list(orders.subjects) == ["orders.>"] and orders.consumers == len(CONSUMERS)
    assert orders.last_seq >= orders.first_seq
    names = {c.name for c in client.list_consumers(STREAM)}
    assert names == set(CONSUMERS)

    client.publish(STREAM, "orders.leases", b"x")
    (m,) = client.fetch(STREAM, "leases", expires=2.0)
    leases = client.list_leases(STREAM, "leases")
    (holder,) = leases.holders
    assert holder.leases == 1 and list(leases.missing_replicas) == [] and len(leases.replicas) == 1
    m.ack()
    assert list(client.list_leases(STREAM, "leases").holders) == []


def test_aio_calls(gateway):
    async def main():
        async with jetgate.aio.Client(gateway.grpc) as c:
            ack = await c.publish_batch(STREAM, [("orders.aioadmin", b"a"), ("orders.aioadmin", b"b")])
            assert len(ack.seqs) == 2
            assert (await c.pause(STREAM, "aioadmin", duration=30.0)).paused
            paused = await c.fetch(STREAM, "aioadmin", expires=0.2)
            assert paused == [] and paused.empty_reason == "PAUSED"
            assert not (await c.resume(STREAM, "aioadmin")).paused
            msgs = await c.fetch(STREAM, "aioadmin", batch=2, expires=5.0)
            assert [m.data for m in msgs] == [b"a", b"b"]
            assert (await c.list_leases(STREAM, "aioadmin")).holders[0].leases == 2
            for m in msgs:
                await m.ack()
            assert STREAM in {s.name for s in await c.list_streams()}
            assert "aioadmin" in {x.name for x in await c.list_consumers(STREAM)}
            assert (await c.list_dead_letters(STREAM, "dlq", page_size=5)).next_page_token == ""
            assert (await c.redrive(STREAM, "dlq", [123456])).failures[0].reason == "DEAD_LETTER_NOT_FOUND"
            with pytest.raises(jetgate.Error):
                await c.unpin(STREAM, "aioadmin")  # no priority groups

    asyncio.run(main())
