"""A subscriber of the Python library (clients/python) for the bench's soak
(bench/soak_libraries.go):

    subscriber.py ADDRESS STREAM CONSUMER

It runs the library's blocking subscriber (concurrency 8) with a handler
that returns at once, so that the library acks every message, until its
stdin closes. Every second it prints one JSON line, {"handled": N,
"failed": M}: handler calls finished, and errors the library reported to
on_error (failed settles, lost leases, broken streams). When stdin closes it
closes the subscriber (drain, 30 s), prints those counts once more, then
{"stats": {...}, "errors": {kind: count}} and exits 0."""

import json
import sys
import threading

import jetgate

address, stream, consumer = sys.argv[1], sys.argv[2], sys.argv[3]
lock = threading.Lock()
handled = 0
errors = {}


def handle(m):
    global handled
    with lock:
        handled += 1


def on_error(e):
    with lock:
        errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1


def emit(line):
    # One writer at a time, so that lines never interleave.
    with lock:
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()


def counts():
    with lock:
        return {"handled": handled, "failed": sum(errors.values())}


def report(stop):
    while not stop.wait(1.0):
        emit(counts())


client = jetgate.Client(address)
sub = client.subscribe(stream, consumer, handle, concurrency=8, on_error=on_error)
stop = threading.Event()
reporter = threading.Thread(target=report, args=(stop,))
reporter.start()
sys.stdin.read()  # until the bench closes it
sub.close(mode="drain", timeout=30.0)
client.close()
stop.set()
reporter.join()
emit(counts())
with lock:
    kinds = dict(errors)
emit({"stats": {k: v for k, v in vars(sub.stats).items() if isinstance(v, int)}, "errors": kinds})
