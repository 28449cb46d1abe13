"""jetgate killed and restarted under a running subscriber."""

from __future__ import annotations

import socket
import threading
import time

import jetgate
from conftest import STREAM, wait_for


def test_restart_mid_stream_loses_nothing_and_runs_nothing_twice_at_once(own_gateway):
    gw = own_gateway
    client = jetgate.Client(gw.grpc)
    n = 300
    seqs = {client.publish(STREAM, "orders.restart", b"r").seq for _ in range(n)}
    lock = threading.Lock()
    active, handled, overlaps = set(), [], []

    def handler(m):
        seq = m.metadata.stream_seq
        with lock:
            if seq in active:
                overlaps.append(seq)
            active.add(seq)
        time.sleep(0.01)
        with lock:
            active.discard(seq)
            handled.append(seq)

    errors = []
    sub = client.subscribe(STREAM, "restart", handler, max_messages=20, concurrency=10, on_error=errors.append)
    try:
        wait_for(lambda: len(handled) >= 80, 30, "80 handled before the restart")
        t0 = time.monotonic()
        gw.restart()  # SIGKILL, then the same data dir, ports and token key
        wait_for(lambda: set(handled) >= seqs, 60, "every message handled")
        print("restart", time.monotonic() - t0, sub.stats, [(e.code, e.reason, e.message) for e in errors if isinstance(e, jetgate.SettleError)][:3], len(errors))
        wait_for(lambda: client.get_consumer(STREAM, "restart").state.num_ack_pending == 0, 30, "every message acked")
    finally:
        sub.close()
        client.close()
    assert overlaps == []
    assert sub.stats.reconnects >= 1
    assert any(isinstance(e, jetgate.StreamError) for e in errors)
    assert sub.held == (0, 0)


def test_extends_use_the_newest_token_across_a_restart(own_gateway):
    # After a restart the gateway settles a lease on its token alone, and
    # checks the token's deadline: only the newest token (from the last
    # Extend) is still good, for the next Extend and for the Ack.
    gw = own_gateway
    client = jetgate.Client(gw.grpc)
    client.publish(STREAM, "orders.restartx", b"x")
    release = threading.Event()
    calls, tokens = [], []

    def handler(m):
        calls.append(m.metadata.num_delivered)
        tokens.append(m.token)
        release.wait(60)
        tokens.append(m.token)

    errors = []
    sub = client.subscribe(STREAM, "restartx", handler, on_error=errors.append)
    try:
        wait_for(lambda: sub.stats.extended >= 1, 15, "a first extend")
        gw.restart()
        wait_for(lambda: sub.stats.extended >= 3, 30, "extends after the restart")
        release.set()
        wait_for(lambda: sub.stats.acked == 1, 15, "the ack")
    finally:
        release.set()
        sub.close()
        client.close()
    assert calls == [1] and tokens[0] != tokens[1]
    assert sub.stats.leases_lost == 0 and sub.stats.settle_errors == 0, errors


def test_a_subscriber_tries_a_gateway_away_within_its_backoff():
    # A broken stream is opened again with backoff, 0.1s doubling to 5s,
    # and the channel under it tries the gateway as often: with gRPC's own
    # reconnect backoff (1s growing by 1.6 to 120s) a gateway back after an
    # outage went unreached for a quarter of a minute. A listener that
    # closes every connection it takes stands in for a gateway away; the
    # gaps between the subscriber's tries stay within 5s and gRPC's 20%
    # jitter (its own backoff reaches 10.5s within 30s).
    away = socket.create_server(("127.0.0.1", 0))
    tries = []

    def take():
        while True:
            try:
                conn, _ = away.accept()
            except OSError:
                return
            tries.append(time.monotonic())
            conn.close()

    threading.Thread(target=take, daemon=True).start()
    client = jetgate.Client(f"127.0.0.1:{away.getsockname()[1]}")
    sub = client.subscribe(STREAM, "away", lambda m: None, on_error=lambda e: None)
    t0 = time.monotonic()
    gaps = lambda: [b - a for a, b in zip(tries, tries[1:])]  # noqa: E731
    try:
        wait_for(lambda: time.monotonic() - t0 > 30 or any(g > 8 for g in gaps()), 35, "30s of tries", every=0.5)
    finally:
        sub.close(mode="nak", timeout=5)
        client.close()
        away.close()
    assert max(gaps()) < 8, [round(g, 1) for g in gaps()]
    assert len(tries) >= 8, [round(g, 1) for g in gaps()]
