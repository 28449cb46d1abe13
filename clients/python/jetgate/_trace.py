"""W3C trace context from a message's headers into its handler, when
OpenTelemetry is installed (an optional import: without it, nothing)."""

from __future__ import annotations

import inspect
from typing import Any, Callable

try:  # optional
    from opentelemetry import context as _context
    from opentelemetry import propagate as _propagate
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - depends on the environment
    _context = _propagate = _trace = None  # type: ignore[assignment]

AVAILABLE = _propagate is not None


def outgoing(metadata: tuple) -> tuple:
    """metadata plus the current trace context (traceparent, tracestate), so
    that the gateway's spans (and a published message's headers) carry it."""
    if not AVAILABLE:
        return metadata
    carrier: dict[str, str] = {}
    _propagate.inject(carrier)
    return metadata + tuple(carrier.items()) if carrier else metadata


def _start(msg: Any) -> tuple[Any, Any]:
    carrier = {k.lower(): v[0] for k, v in msg.headers.items() if v}
    token = _context.attach(_propagate.extract(carrier))
    m = msg.metadata
    span = _trace.get_tracer("jetgate").start_as_current_span(
        f"{m.stream} process",
        kind=_trace.SpanKind.CONSUMER,
        attributes={
            "messaging.system": "nats",
            "messaging.operation.type": "process",
            "messaging.destination.name": msg.subject,
            "messaging.consumer.group.name": m.consumer,
            "messaging.message.id": str(m.stream_seq),
        },
    )
    return token, span


def call(handler: Callable[[Any], Any], msg: Any) -> Any:
    """Runs a blocking handler in the trace context of msg's headers."""
    if not AVAILABLE:
        return handler(msg)
    token, span = _start(msg)
    try:
        with span:
            return handler(msg)
    finally:
        _context.detach(token)


async def acall(handler: Callable[[Any], Any], msg: Any) -> Any:
    """Runs an async handler (or a plain one) in the trace context of msg's headers."""
    if not AVAILABLE:
        r = handler(msg)
        return await r if inspect.isawaitable(r) else r
    token, span = _start(msg)
    try:
        with span:
            r = handler(msg)
            return await r if inspect.isawaitable(r) else r
    finally:
        _context.detach(token)
