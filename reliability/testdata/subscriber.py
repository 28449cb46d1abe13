"""A subscriber of the Python library (clients/python) for the fault suite's
libraries-in-the-loop scenario (reliability/libraries_test.go).

    subscriber.py ADDRESS STREAM CONSUMER LOG ACK_WAIT

It runs the library's blocking subscriber (concurrency 8) until its stdin
closes, then closes it (drain) and exits. Handlers run for a random time
(some past ack_wait: the subscriber extends them), some raise (nak'ed), and
the rest ack their message themselves, so that an ack confirmed is known.
Each handler writes one JSON line when it starts and one when it ends, in
the order they happen: {"ev": "start"|"end", "seq", "delivery", "t" (unix ms), "outcome"}
with outcome "acked", "ack_failed" (with the failure's reason and detail) or
"raised" on "end"."""

import json
import random
import sys
import threading
import time

import jetgate

address, stream, consumer, log_path, ack_wait = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])
lock = threading.Lock()
out = open(log_path, "a", buffering=1)
rng = random.Random()


def record(ev, m, **kw):
    line = {"ev": ev, "seq": m.metadata.stream_seq, "delivery": m.metadata.num_delivered, "t": int(time.time() * 1000), **kw}
    with lock:
        out.write(json.dumps(line) + "\n")
        out.flush()


def handle(m):
    record("start", m)
    with lock:
        p, q = rng.random(), rng.random()
    if p < 0.02 or m.metadata.stream_seq % 37 == 0 and m.metadata.num_delivered == 1:
        time.sleep(ack_wait + 0.2 + q)  # past ack_wait: extended meanwhile
    elif p < 0.15:
        time.sleep(0.05 + 0.4 * q)
    else:
        time.sleep(0.02 * q)
    if m.metadata.num_delivered < 3 and rng.random() < 0.1:
        record("end", m, outcome="raised")
        raise RuntimeError("raised by design")
    try:
        m.ack()
    except jetgate.SettleError as e:
        record("end", m, outcome="ack_failed", reason=e.reason, detail=e.message)
        return
    record("end", m, outcome="acked")


errors = []
client = jetgate.Client(address)
sub = client.subscribe(stream, consumer, handle, max_messages=16, concurrency=8,
                       nak_delay=0.1, max_nak_delay=1.0, on_error=lambda e: errors.append(e))
sys.stdin.read()  # until the test closes it
sub.close(mode="drain", timeout=30.0)
client.close()
kinds = {}
for e in errors:
    kinds[type(e).__name__] = kinds.get(type(e).__name__, 0) + 1
print(json.dumps({"stats": {k: v for k, v in vars(sub.stats).items() if isinstance(v, int)}, "errors": kinds}))
