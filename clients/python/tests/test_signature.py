"""The subscriber's parameters in the order DESIGN and the README give them.

`subscribe(stream, consumer, handler, max_messages=100, max_bytes=None,
concurrency=None, max_lease=3600.0, on_error=None)`: an `on_error` passed by
position landed in `ack_batch`, which stood before it.
"""

import inspect

import jetgate
import jetgate.aio

DOCUMENTED = ["self", "stream", "consumer", "handler", "max_messages", "max_bytes", "concurrency", "max_lease", "on_error"]


def _positional(fn):
    return [
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]


def test_subscribe_takes_the_documented_parameters_in_order():
    for fn in (jetgate.Client.subscribe, jetgate.aio.Client.subscribe):
        assert _positional(fn)[: len(DOCUMENTED)] == DOCUMENTED, fn.__qualname__
