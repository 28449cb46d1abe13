"""jetgate killed and restarted under a running subscriber."""

from __future__ import annotations

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
