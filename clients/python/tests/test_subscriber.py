"""The blocking subscriber against a real jetgate."""

from __future__ import annotations

import threading
import time

import pytest

import jetgate
from conftest import STREAM, wait_for


def ack_pending(client, consumer):
    return client.get_consumer(STREAM, consumer).state.num_ack_pending


def publish(client, consumer, n, data=b"x"):
    return [client.publish(STREAM, f"orders.{consumer}", data).seq for _ in range(n)]


def test_handler_slower_than_ack_wait_is_not_redelivered(client):
    # ack_wait is 2s: the handler works for 5s, so only extensions keep the lease.
    (seq,) = publish(client, "slow", 1)
    calls = []

    def handler(m):
        calls.append(m.metadata.num_delivered)
        time.sleep(5)  # the handler's work

    sub = client.subscribe(STREAM, "slow", handler)
    try:
        wait_for(lambda: sub.stats.acked == 1, 15, "the slow message acked")
    finally:
        sub.close()
    assert calls == [1]
    assert sub.stats.extended >= 2 and sub.stats.settle_errors == 0
    info = client.get_consumer(STREAM, "slow")
    assert info.state.num_ack_pending == 0 and info.state.num_redelivered == 0
    assert info.state.ack_floor.stream_seq >= seq


def test_lease_is_let_go_after_max_lease(client):
    """At max_lease the lease is let go (nak'ed); its redelivery waits beside
    the handler still running on the message, then runs in a handler of its
    own: never two at once (as the TypeScript subscriber)."""
    publish(client, "lease", 1)
    calls, running, overlap = [], [0], []
    lock = threading.Lock()
    holder = {}

    def handler(m):
        with lock:
            overlap.append(running[0] > 0)
            running[0] += 1
            calls.append((time.monotonic(), m.metadata.num_delivered))
        try:
            if m.metadata.num_delivered == 1:
                # stuck until the message has come back and waits beside it
                wait_for(lambda: holder["sub"].stats.merged == 1, 30, "the redelivery beside the handler")
        finally:
            with lock:
                running[0] -= 1

    errors = []
    t0 = time.monotonic()
    sub = client.subscribe(STREAM, "lease", handler, max_lease=3.0, on_error=errors.append)
    holder["sub"] = sub
    try:
        wait_for(lambda: len(calls) == 2 and sub.stats.acked == 1, 30, "the redelivery after max_lease")
        wait_for(lambda: sub.stats.settle_errors == 1, 5, "the first handler's ack refused")
    finally:
        sub.close()
    assert [d for _, d in calls] == [1, 2]
    assert overlap == [False, False], "two handlers ran the message at once"
    assert calls[1][0] - t0 >= 3.0  # held (extended) for max_lease, then let go
    assert sub.stats.leases_dropped == 1
    assert any(isinstance(e, jetgate.LeaseDropped) for e in errors)
    refused = [e for e in errors if isinstance(e, jetgate.SettleError)]
    assert refused and refused[0].reason in ("LEASE_EXPIRED", "LEASE_SETTLED")
    assert ack_pending(client, "lease") == 0


def test_max_messages_holds_under_a_backlog(client):
    n, limit = 3000, 20
    publish(client, "flow", n)
    seen, peak, pending_peak = set(), [0, 0], [0]
    lock = threading.Lock()
    inside = [0]
    box = []

    def handler(m):
        with lock:
            inside[0] += 1
            peak[0] = max(peak[0], inside[0])
            if box:
                peak[1] = max(peak[1], box[0].held[0])
        time.sleep(0.001)
        with lock:
            inside[0] -= 1
            seen.add(m.metadata.stream_seq)

    sub = client.subscribe(STREAM, "flow", handler, max_messages=limit, concurrency=limit)
    box.append(sub)
    try:
        def done():
            pending_peak[0] = max(pending_peak[0], ack_pending(client, "flow"))
            return len(seen) == n
        wait_for(done, 120, f"{n} messages handled", every=0.05)
    finally:
        sub.close()
    assert peak[0] <= limit and peak[1] <= limit, peak
    assert peak[1] >= limit // 2  # the limit was reached: a real backlog
    assert pending_peak[0] <= limit
    assert sub.stats.acked == n
    assert sub.stats.settle_requests < n // 4  # acks were batched


def test_max_bytes_holds(client):
    size, limit = 1000, 5000
    publish(client, "bytes", 200, data=b"b" * size)
    peak = [0, 0]
    box = []
    lock = threading.Lock()
    done = []

    def handler(m):
        with lock:
            n, b = box[0].held if box else (0, 0)
            peak[0], peak[1] = max(peak[0], n), max(peak[1], b)
        time.sleep(0.002)
        with lock:
            done.append(m.metadata.stream_seq)

    sub = client.subscribe(STREAM, "bytes", handler, max_messages=100, max_bytes=limit, concurrency=10)
    box.append(sub)
    try:
        wait_for(lambda: len(set(done)) == 200, 60, "200 messages")
    finally:
        sub.close()
    assert peak[1] <= limit and peak[0] <= limit // size, peak


def test_raising_handler_is_retried_with_a_growing_delay(client):
    publish(client, "retry", 1)
    calls = []

    def handler(m):
        calls.append((time.monotonic(), m.metadata.num_delivered))
        if m.metadata.num_delivered < 3:
            raise RuntimeError("not yet")

    errors = []
    sub = client.subscribe(STREAM, "retry", handler, nak_delay=0.5, on_error=errors.append)
    try:
        wait_for(lambda: sub.stats.acked == 1, 15, "the third delivery acked")
    finally:
        sub.close()
    assert [d for _, d in calls] == [1, 2, 3]
    gap1, gap2 = calls[1][0] - calls[0][0], calls[2][0] - calls[1][0]
    assert gap1 >= 0.45 and gap2 >= 0.95 and gap2 > gap1, (gap1, gap2)
    assert sub.stats.naked == 2 and sub.stats.handler_errors == 2
    assert sum(isinstance(e, jetgate.HandlerError) for e in errors) == 2
    assert isinstance(errors[0].__cause__, RuntimeError)


def test_final_error_and_explicit_term_end_the_message(client):
    publish(client, "final", 2)
    calls = []

    def handler(m):
        calls.append(m.metadata.stream_seq)
        if len(calls) == 1:
            raise jetgate.Final("cannot be processed")
        m.term("explicit")  # the handler's own settle wins over its raise
        raise RuntimeError("after term")

    sub = client.subscribe(STREAM, "final", handler)
    try:
        wait_for(lambda: sub.stats.termed == 2, 10, "both terminated")
    finally:
        sub.close()
    assert len(calls) == 2 and sub.stats.naked == 0
    assert ack_pending(client, "final") == 0


def test_explicit_settles_in_the_handler(client):
    publish(client, "explicit", 1)
    outcomes = []

    def handler(m):
        before = m.token
        m.extend()
        outcomes.append(m.token != before)
        m.ack()
        try:
            m.nak()
        except jetgate.SettleError as e:
            outcomes.append(e.reason)

    sub = client.subscribe(STREAM, "explicit", handler)
    try:
        wait_for(lambda: len(outcomes) == 2, 10, "the handler")
    finally:
        sub.close()
    assert outcomes == [True, "ALREADY_SETTLED"]
    assert sub.stats.acked == 1 and sub.stats.settle_errors == 0


def _close_leaves_nothing_pending(client, consumer, mode):
    publish(client, consumer, 60)
    started, release, late = [], threading.Event(), []
    lock = threading.Lock()

    def handler(m):
        with lock:
            started.append(m.metadata.stream_seq)
        if mode == "drain":
            time.sleep(0.3)
            return
        release.wait(30)
        try:
            m.ack()
        except jetgate.SettleError as e:
            late.append(e.reason if e.code == "CANCELLED" else f"{e.reason} (code {e.code!r})")

    sub = client.subscribe(STREAM, consumer, handler, max_messages=20, concurrency=5)
    wait_for(lambda: len(started) >= 5 and sub.held[0] == 20, 10, "handlers running and the rest waiting")
    t0 = time.monotonic()
    sub.close(mode=mode, timeout=10)
    took = time.monotonic() - t0
    release.set()
    # Nothing it held waits for ack_wait (30s): JetStream keeps a nak'ed
    # message in ack pending until it is delivered again, so another client
    # takes every message not acked at once, and then nothing is pending.
    left = 60 - sub.stats.acked
    again = []
    def fetch_rest():
        for m in client.fetch(STREAM, consumer, batch=100, expires=0.2):
            again.append(m.metadata.num_delivered)
            m.ack()
        return len(again) == left
    wait_for(fetch_rest, 3.0, f"the {left} messages not acked, at once")
    assert again.count(2) >= sub.stats.naked  # the nak'ed ones, redelivered
    assert ack_pending(client, consumer) == 0
    return sub, started, took, late


def test_close_drain_finishes_handlers_and_naks_the_rest(client):
    sub, started, took, _ = _close_leaves_nothing_pending(client, "drain", "drain")
    assert sub.stats.acked == len(started) >= 5  # every started handler finished and was acked
    assert sub.stats.naked >= 1 and took < 5


def test_close_nak_naks_everything_at_once(client):
    sub, started, took, late = _close_leaves_nothing_pending(client, "naks", "nak")
    assert sub.stats.acked == 0 and sub.stats.naked == 20 and took < 2
    wait_for(lambda: len(late) == len(started), 5, "the handlers' late acks")
    assert set(late) == {"SUBSCRIBER_CLOSED"}


def test_broken_stream_does_not_hand_a_message_to_two_handlers(client):
    # The stream breaks while the handler runs: the gateway naks what the
    # stream held, so the message comes straight back on the new stream,
    # and waits beside its handler for the outcome instead of running twice.
    publish(client, "merge", 1)
    calls = []
    box = []

    def handler(m):
        calls.append(m.metadata.num_delivered)
        box[0]._engine._streams.conns[0].call.cancel()  # the break, as a network would
        wait_for(lambda: box[0].stats.merged == 1, 10, "the redelivery held beside the handler")

    errors = []
    sub = client.subscribe(STREAM, "merge", handler, on_error=errors.append)
    box.append(sub)
    try:
        wait_for(lambda: sub.stats.acked >= 1, 15, "the message acked")
    finally:
        sub.close()
    assert calls == [1]
    assert sub.stats.reconnects >= 1 and sub.stats.settle_errors == 0
    assert ack_pending(client, "merge") == 0


def test_max_messages_holds_while_handlers_outlast_ack_wait(client):
    # ack_wait is 2s and each handler takes 2.5s: the leases are extended,
    # and the gateway must not take an extended lease for an expired one and
    # hand the stream more.
    publish(client, "slowflow", 4)
    box, peak, done = [], [0, 0], []

    def handler(m):
        time.sleep(2.5)  # the handler's work
        done.append(m.metadata.stream_seq)

    sub = client.subscribe(STREAM, "slowflow", handler, max_messages=2)
    box.append(sub)
    try:
        def finished():
            peak[0] = max(peak[0], sub.held[0])
            peak[1] = max(peak[1], ack_pending(client, "slowflow"))
            return len(done) == 4
        wait_for(finished, 20, "4 slow messages", every=0.05)
    finally:
        sub.close()
    assert peak == [2, 2]
    assert sub.stats.received == 4 and sub.stats.extended >= 2


def test_a_message_larger_than_max_bytes_stops_the_subscriber(client):
    """A message larger than max_bytes can never be held: the gateway ended
    every stream MESSAGE_TOO_LARGE, and the subscriber reconnected for ever
    (8 reconnects in 8 s, a warning each), handling nothing behind it and
    never saying so through wait(). It now stops with that error, as for
    any error no retry can mend, and the message stays for a reader that
    can take it."""
    client.publish(STREAM, "orders.toolarge", b"x" * 2000)
    sub = client.subscribe(STREAM, "toolarge", lambda m: None, max_bytes=1000, on_error=lambda e: None)
    try:
        with pytest.raises(jetgate.StreamError) as failed:
            sub.wait(10)
    finally:
        sub.close()
    assert failed.value.reason == "MESSAGE_TOO_LARGE", failed.value
    assert sub.stats.reconnects == 0, sub.stats
    [m] = client.fetch(STREAM, "toolarge", expires=2.0)
    m.ack()
