"""Settle and extend requests: one RPC for many tokens, a result per token."""

from __future__ import annotations

import datetime
from typing import Any, NamedTuple, Sequence

from jetgate import _message
from jetgate._errors import SettleError, code_name
from jetgate.v1 import consumer_pb2

MAX_TOKENS = 1000  # the API's bound on tokens per settle request

OPS = ("ack", "nak", "term", "extend")


class Extended(NamedTuple):
    """One lease extended: its new token and deadline. An extend by 0 gives
    the message back: no token, and the deadline is when it went back."""

    token: str
    deadline: datetime.datetime


def request(op: str, stream: str, consumer: str, tokens: Sequence[str], arg: Any) -> tuple[str, Any]:
    """The ConsumerService method name and request of a settle or extend."""
    if op == "ack":
        return "Ack", consumer_pb2.AckRequest(stream=stream, consumer=consumer, tokens=tokens)
    if op == "nak":
        req = consumer_pb2.NakRequest(stream=stream, consumer=consumer, tokens=tokens)
        if arg:
            req.delay.CopyFrom(_message.duration(arg))
        return "Nak", req
    if op == "term":
        return "Term", consumer_pb2.TermRequest(stream=stream, consumer=consumer, tokens=tokens, reason=arg or "")
    if op == "extend":
        req = consumer_pb2.ExtendRequest(stream=stream, consumer=consumer, tokens=tokens)
        if arg is not None:  # 0 is set too: it gives the message back
            req.duration.CopyFrom(_message.duration(arg))
        return "Extend", req
    raise ValueError(f"unknown settle {op!r}")


def results(op: str, tokens: Sequence[str], resp: Any) -> list[SettleError | Extended | None]:
    """Each token's outcome: None (done), an Extended (for extend), or the
    SettleError that says why it failed."""
    out: list[SettleError | Extended | None] = [None] * len(tokens)
    if op == "extend":
        new = {le.token: le for le in resp.leases}
        for i, t in enumerate(tokens):
            le = new.get(t)
            if le is not None:
                out[i] = Extended(le.new_token, le.lease_deadline.ToDatetime(tzinfo=datetime.timezone.utc))
    for f in resp.failures:
        if 0 <= f.index < len(tokens):
            out[f.index] = SettleError(f.reason, f.message, code_name(f.code), f.token)
    if op == "extend":
        for i, t in enumerate(tokens):
            if out[i] is None:
                out[i] = SettleError("NOT_EXTENDED", "the gateway named neither a new lease nor a failure", "", t)
    return out
