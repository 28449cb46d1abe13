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


class Proxy:
    """A TCP relay to the gateway whose connections break() cuts while the
    gateway stays up: a proxy's or load balancer's reset."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self._target = (host, int(port))
        self._srv = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._srv.getsockname()[1]}"
        self._socks: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                down, _ = self._srv.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(self._target)
            except OSError:
                down.close()
                continue
            with self._lock:
                self._socks |= {down, up}
            for a, b in ((down, up), (up, down)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        with self._lock:
            socks, self._socks = self._socks, set()
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self._srv.close()
        self.cut()


def _leases_given_back(client, consumer):
    return all(h.leases == 0 for h in client.list_leases(STREAM, consumer).holders)


def _all_settled(client, consumer):
    """Whether the server holds nothing of consumer's unsettled: every
    redelivery came and was settled (a count of the subscriber's acks may
    pass n while a redelivery is still on its way, and a close then reports
    its handler's refused ack)."""
    state = client.get_consumer(STREAM, consumer).state
    return state.num_ack_pending == 0 and state.num_pending == 0


def test_a_stream_broken_under_running_handlers_acks_their_redeliveries_with_their_outcome(gateway, client):
    """A stream that breaks while jetgate stays up: jetgate naks what the
    stream held, so the handlers still running hold void leases. Each
    message's redelivery came on the next stream only once its handler's ack
    had been refused (the room was the handler's), and ran again: every
    message handled twice, 5 settle_errors LEASE_SETTLED. The redelivery now
    takes its handler's outcome."""
    n = 5
    for i in range(n):
        client.publish(STREAM, "orders.blip", str(i).encode())
    proxy = Proxy(gateway.grpc)
    via = jetgate.Client(proxy.address)
    gate, lock = threading.Event(), threading.Lock()
    runs: dict[int, int] = {}

    def handler(m):
        with lock:
            runs[m.metadata.stream_seq] = runs.get(m.metadata.stream_seq, 0) + 1
        gate.wait(30)

    sub = via.subscribe(STREAM, "blip", handler, max_messages=n, on_error=lambda e: None)
    try:
        wait_for(lambda: len(runs) == n, 10, "every handler running")
        proxy.cut()
        wait_for(lambda: _leases_given_back(client, "blip"), 15, "jetgate to give back the broken stream's leases")
        gate.set()
        wait_for(lambda: _all_settled(client, "blip"), 15, "every redelivery settled with its handler's outcome")
    finally:
        gate.set()
        sub.close()
        via.close()
        proxy.close()
    assert sorted(runs.values()) == [1] * n, f"a message ran twice: {runs}"
    assert sub.stats.settle_errors == 0, sub.stats
    assert client.fetch(STREAM, "blip", batch=n, expires=1.0) == [], "handled messages came back"


def test_aio_a_stream_broken_under_running_handlers_acks_their_redeliveries(gateway, client):
    import asyncio

    import jetgate.aio

    n = 5
    for i in range(n):
        client.publish(STREAM, "orders.aioblip", str(i).encode())
    proxy = Proxy(gateway.grpc)
    runs: dict[int, int] = {}

    async def main():
        gate = asyncio.Event()

        async def handler(m):
            runs[m.metadata.stream_seq] = runs.get(m.metadata.stream_seq, 0) + 1
            await gate.wait()

        async with jetgate.aio.Client(proxy.address) as via:
            sub = via.subscribe(STREAM, "aioblip", handler, max_messages=n, on_error=lambda e: None)
            try:
                while len(runs) < n:
                    await asyncio.sleep(0.02)
                proxy.cut()
                for _ in range(300):
                    if await asyncio.to_thread(_leases_given_back, client, "aioblip"):
                        break
                    await asyncio.sleep(0.05)
                gate.set()
                for _ in range(300):
                    if await asyncio.to_thread(_all_settled, client, "aioblip"):
                        break
                    await asyncio.sleep(0.05)
            finally:
                gate.set()
                await sub.close()
            return sub.stats

    stats = asyncio.run(main())
    proxy.close()
    assert sorted(runs.values()) == [1] * n, f"a message ran twice: {runs}"
    assert stats.settle_errors == 0 and stats.acked >= n, stats
    assert client.fetch(STREAM, "aioblip", batch=n, expires=1.0) == [], "handled messages came back"
