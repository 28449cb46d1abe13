"""bench.py measures a subscriber with a no-op handler: messages a second
from a backlog, blocking and asyncio, against a running jetgate.

  /usr/bin/python3 clients/python/bench.py --address 127.0.0.1:9090 --messages 20000

It publishes the backlog first (not timed), then times one subscriber from
subscribe to the last message handled (acks confirmed), and prints msg/s and
the Python process's CPU seconds per 100k messages."""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import os
import resource
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jetgate  # noqa: E402
import jetgate.aio  # noqa: E402


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def publish(client: jetgate.Client, a: argparse.Namespace) -> None:
    body = b"x" * a.size
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: client.publish(a.stream, a.subject, body), range(a.messages)))


def run_sync(client: jetgate.Client, a: argparse.Namespace) -> tuple[float, float, jetgate.Stats]:
    n, done = [0], threading.Event()
    lock = threading.Lock()

    def handler(m: jetgate.Message) -> None:
        with lock:
            n[0] += 1
            if n[0] == a.messages:
                done.set()

    c0, t0 = cpu(), time.perf_counter()
    sub = client.subscribe(a.stream, a.consumer, handler, max_messages=a.max_messages, ack_batch=a.ack_batch, concurrency=a.concurrency)
    done.wait()
    sub.close()  # returns once every ack is confirmed
    return time.perf_counter() - t0, cpu() - c0, sub.stats


async def run_aio(a: argparse.Namespace) -> tuple[float, float, jetgate.Stats]:
    async with jetgate.aio.Client(a.address) as client:
        n, done = [0], asyncio.Event()

        async def handler(m: jetgate.aio.Message) -> None:
            n[0] += 1
            if n[0] == a.messages:
                done.set()

        c0, t0 = cpu(), time.perf_counter()
        sub = client.subscribe(a.stream, a.consumer, handler, max_messages=a.max_messages, ack_batch=a.ack_batch, concurrency=a.concurrency)
        await done.wait()
        await sub.close()
        return time.perf_counter() - t0, cpu() - c0, sub.stats


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--address", default="127.0.0.1:9090")
    p.add_argument("--stream", default="ORDERS")
    p.add_argument("--consumer", default="billing")
    p.add_argument("--subject", default="orders.pybench")
    p.add_argument("--messages", type=int, default=20000)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--max-messages", type=int, default=200)
    p.add_argument("--ack-batch", type=int, default=100)
    p.add_argument("--api", choices=["sync", "aio", "both"], default="both")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--concurrency", type=int, default=None)
    a = p.parse_args()
    client = jetgate.Client(a.address)
    print(f"bench.py: {a.messages} messages of {a.size} B, max_messages {a.max_messages}, ack_batch {a.ack_batch}, no-op handler")
    for r in range(a.rounds):
        for api in (["sync", "aio"] if a.api == "both" else [a.api]):
            publish(client, a)
            took, used, st = run_sync(client, a) if api == "sync" else asyncio.run(run_aio(a))
            print(
                f"  {api:5} round {r + 1}: {a.messages / took:9,.0f} msg/s  {took:6.2f}s  "
                f"CPU {used / a.messages * 1e5:5.1f} s/100k  settle RPCs {st.settle_requests}  acked {st.acked}"
            )
    client.close()


if __name__ == "__main__":
    main()
