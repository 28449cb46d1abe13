"""Publishes four messages to jetgate's demo stream and handles them with a
subscriber: two at once, a slow one that outlasts its lease (the subscriber
extends it), and a failing one that is retried. Run jetgate first:
go run ./cmd/jetgate --ack-wait 3s (with the default 30s the slow one takes 30s);
then: python3 example.py [ADDRESS] (default 127.0.0.1:9090)."""

import datetime
import sys
import threading
import time

import jetgate

address = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9090"
done, finished = set(), threading.Event()


def say(line):                          # one write a line: handlers run on threads of their own
    sys.stdout.write(line + "\n")


def handle(m):                          # returns: acked; raises: nak'ed, retried later
    n = m.metadata.num_delivered
    if m.data == b"fail" and n < 3:
        raise RuntimeError(f"failed on delivery {n}")        # back after 1s, then 2s
    if m.data == b"slow":                                     # outlasts its lease: extended for you
        time.sleep((m.lease_deadline - datetime.datetime.now(datetime.timezone.utc)).total_seconds() + 1)
    say(f"handled {m.data.decode()!r} (delivery {n})")
    done.add(m.data)
    if done >= {b"one", b"two", b"slow", b"fail"}:
        finished.set()


client = jetgate.Client(address)
for body in (b"one", b"two", b"slow", b"fail"):
    client.publish("ORDERS", "orders.example", body)
with client.subscribe("ORDERS", "billing", handle, on_error=lambda e: say(f"on_error: {e}")) as sub:
    finished.wait(120)                  # or sub.wait(): until closed, or failed (raises)
print(sub.stats)                        # leaving the with block closed it: drain, the rest nak'ed back at once
