"""The unary calls: publish, fetch, settle, extend, get_consumer."""

from __future__ import annotations

import datetime
import time

import pytest

import jetgate
from conftest import STREAM, wait_for


def test_publish_fetch_ack_round_trip(client):
    ack = client.publish(STREAM, "orders.basic", b"hello", headers={"X-One": "a", "X-Two": ["b", "c"]}, msg_id="basic-1")
    assert ack.stream == STREAM and ack.seq > 0 and not ack.duplicate
    again = client.publish(STREAM, "orders.basic", b"hello", msg_id="basic-1")
    assert again.duplicate and again.seq == ack.seq

    msgs = client.fetch(STREAM, "basic", batch=10, expires=2.0)
    assert len(msgs) == 1
    m = msgs[0]
    assert (m.data, m.subject) == (b"hello", "orders.basic")
    assert m.headers["X-One"] == ["a"] and m.headers["X-Two"] == ["b", "c"]
    assert m.metadata.stream_seq == ack.seq and m.metadata.num_delivered == 1
    assert m.metadata.stream == STREAM and m.metadata.consumer == "basic"
    assert m.lease_deadline > datetime.datetime.now(datetime.timezone.utc)
    m.ack()
    m.ack()  # the same settle again is answered as the first
    with pytest.raises(jetgate.SettleError) as e:
        m.nak()
    assert e.value.reason == "LEASE_SETTLED"
    assert client.get_consumer(STREAM, "basic").state.num_ack_pending == 0


def test_fetch_empty_is_an_empty_list(client):
    assert client.fetch(STREAM, "basic", batch=5, expires=0.2) == []


def test_unknown_consumer_raises_with_reason(client):
    with pytest.raises(jetgate.Error) as e:
        client.get_consumer(STREAM, "nobody")
    assert e.value.code == "NOT_FOUND"
    assert e.value.reason and e.value.reason != "NOT_FOUND"  # the ErrorInfo reason, not just the code


def test_settle_of_an_expired_lease_raises_lease_expired(client):
    client.publish(STREAM, "orders.expired", b"late")
    (m,) = client.fetch(STREAM, "expired", expires=2.0)
    # The inherent wait of an expiry test: until the lease's own deadline.
    left = (m.lease_deadline - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
    time.sleep(max(0.0, left) + 0.05)
    with pytest.raises(jetgate.SettleError) as e:
        m.ack()
    assert e.value.reason == "LEASE_EXPIRED"
    assert e.value.token == m.token
    # JetStream redelivers it; settle the redelivery so the consumer ends clean.
    (again,) = client.fetch(STREAM, "expired", expires=5.0)
    assert again.metadata.stream_seq == m.metadata.stream_seq and again.metadata.num_delivered == 2
    again.term("test done")


def test_extend_moves_the_message_to_its_new_token(client):
    client.publish(STREAM, "orders.extendtok", b"x")
    (m,) = client.fetch(STREAM, "extendtok", expires=2.0)
    old_token, old_deadline = m.token, m.lease_deadline
    # A token carries its deadline to the millisecond, and an extend in the
    # same millisecond as the fetch gives the same deadline, so the same
    # token: extend a few milliseconds later.
    fetched = datetime.datetime.now(datetime.timezone.utc)
    wait_for(lambda: datetime.datetime.now(datetime.timezone.utc) - fetched > datetime.timedelta(milliseconds=5), 1, "5ms")
    m.extend()
    assert m.token != old_token and m.lease_deadline >= old_deadline
    m.ack()
    wait_for(lambda: client.get_consumer(STREAM, "extendtok").state.num_ack_pending == 0, 5, "ack pending 0")


def test_nak_with_delay_and_term(client):
    client.publish(STREAM, "orders.naks", b"n")
    (m,) = client.fetch(STREAM, "naks", expires=2.0)
    t0 = time.monotonic()
    m.nak(delay=0.5)
    (again,) = client.fetch(STREAM, "naks", expires=5.0)
    assert time.monotonic() - t0 >= 0.45
    assert again.metadata.num_delivered == 2
    again.term("done")
    with pytest.raises(jetgate.SettleError) as e:
        again.ack()
    assert e.value.reason == "LEASE_SETTLED"
