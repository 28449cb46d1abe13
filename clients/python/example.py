"""Publishes four messages to jetgate's demo stream and handles them with a
subscriber: two at once, a slow one that outlasts its lease (the subscriber
extends it), and a failing one that is retried. Run jetgate first:
go run ./cmd/jetgate --ack-wait 3s (with the default 30s the slow one takes 30s)."""

import datetime
import threading
import time

import jetgate

done = set()
finished = threading.Event()


def handle(m):
    n = m.metadata.num_delivered
    if m.data == b"fail" and n < 3:
        raise RuntimeError(f"failed on delivery {n}")  # nak'ed: back after 1s, then 2s
    if m.data == b"slow":  # work past the lease's deadline: the subscriber extends it
        left = (m.lease_deadline - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
        time.sleep(left + 1)
    print(f"handled {m.data.decode()!r} (delivery {n})")
    done.add(m.data)
    if done >= {b"one", b"two", b"slow", b"fail"}:
        finished.set()


client = jetgate.Client("127.0.0.1:9090")
for body in (b"one", b"two", b"slow", b"fail"):
    client.publish("ORDERS", "orders.example", body)
sub = client.subscribe("ORDERS", "billing", handle, on_error=lambda e: print("on_error:", e))
finished.wait(120)
sub.close()  # drain: running handlers finish, anything else is nak'ed back at once
print(sub.stats)
