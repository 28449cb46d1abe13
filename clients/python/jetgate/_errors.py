"""The errors the library raises, and the reason an RPC error carries."""

from __future__ import annotations

import grpc


class Error(Exception):
    """A jetgate call failed: code is the gRPC status code's name, reason the
    UPPER_SNAKE reason of its google.rpc.ErrorInfo when it has one."""

    def __init__(self, reason: str, message: str = "", code: str = "") -> None:
        super().__init__(f"{reason}: {message}" if message else reason)
        self.reason = reason
        self.message = message
        self.code = code


class SettleError(Error):
    """A settle (ack, nak, term) or an extend of one message failed: reason is
    the per-token reason (LEASE_EXPIRED, LEASE_SETTLED, ...), or the RPC's
    when the whole request failed, or the subscriber's own: ALREADY_SETTLED
    (code FAILED_PRECONDITION, as LEASE_SETTLED) or SUBSCRIBER_CLOSED after
    close (code CANCELLED). code is the gRPC code's name."""

    def __init__(self, reason: str, message: str = "", code: str = "", token: str = "") -> None:
        super().__init__(reason, message, code)
        self.token = token


class Final(Exception):
    """Raised by a subscriber's handler for a message that must not come back:
    the message is terminated (Term) with reason instead of nak'ed."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


class LeaseLost(Error):
    """Passed to on_error: the subscriber lost the lease of a message it held
    (its deadline passed, or an Extend failed), so JetStream redelivers it."""


class LeaseDropped(Error):
    """Passed to on_error: a lease reached max_lease and was let go."""


class HandlerError(Error):
    """Passed to on_error: a handler raised; the message was nak'ed (or
    terminated for Final). __cause__ is what the handler raised."""


class StreamError(Error):
    """Passed to on_error: the Consume stream broke; the subscriber reconnects."""


_CODE_NAMES = {c.value[0]: c.name for c in grpc.StatusCode}


def code_name(code: int) -> str:
    """The name of a numeric gRPC status code (google.rpc.Code)."""
    return _CODE_NAMES.get(code, str(code))


def _fields(buf: bytes):
    """Yields (field number, wire type, value) of a protobuf message; enough
    wire format to read google.rpc.Status and ErrorInfo without their stubs."""
    i = 0

    def varint() -> int:
        nonlocal i
        shift = result = 0
        while True:
            b = buf[i]
            i += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7

    while i < len(buf):
        key = varint()
        num, wt = key >> 3, key & 7
        if wt == 0:
            yield num, wt, varint()
        elif wt == 2:
            n = varint()
            yield num, wt, buf[i : i + n]
            i += n
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        else:
            return


def _reason(details: bytes) -> str:
    """The ErrorInfo reason in a serialized google.rpc.Status, or ""."""
    try:
        for num, wt, any_ in _fields(details):
            if num != 3 or wt != 2:  # Status.details
                continue
            url, value = "", b""
            for n, w, v in _fields(any_):
                if n == 1 and w == 2:
                    url = v.decode()
                elif n == 2 and w == 2:
                    value = v
            if url.endswith("google.rpc.ErrorInfo"):
                for n, w, v in _fields(value):
                    if n == 1 and w == 2:
                        return v.decode()
    except (IndexError, UnicodeDecodeError):
        pass
    return ""


def from_rpc(err: grpc.RpcError, cls: type[Error] = Error) -> Error:
    """An Error for a failed call, with its ErrorInfo reason when it has one,
    else the status code's name as the reason."""
    code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
    md = err.trailing_metadata() if hasattr(err, "trailing_metadata") else None
    reason = ""
    for k, v in md or ():
        if k == "grpc-status-details-bin" and isinstance(v, bytes):
            reason = _reason(v)
    details = err.details() if hasattr(err, "details") else str(err)
    return cls(reason or code.name, details or "", code.name)
