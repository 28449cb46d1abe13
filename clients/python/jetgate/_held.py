"""What a subscriber holds: each lease, the streams that gave them, counters."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any, Callable, Optional

WAITING, RUNNING, SUCCESSOR = "waiting", "running", "successor"


@dataclasses.dataclass
class Stats:
    """A subscriber's counters (sub.stats returns a copy)."""

    received: int = 0  # deliveries received on the Consume streams
    handled: int = 0  # handler calls that returned
    handler_errors: int = 0  # handler calls that raised (nak'ed, or terminated for Final)
    acked: int = 0
    naked: int = 0
    termed: int = 0
    extended: int = 0  # leases extended
    settle_errors: int = 0  # settles of finished handlers that failed
    leases_dropped: int = 0  # leases let go at max_lease
    leases_lost: int = 0  # leases lost: deadline passed or an extend refused
    merged: int = 0  # redeliveries of a message in a handler, answered with its outcome
    reconnects: int = 0  # Consume streams that broke and were opened again
    settle_requests: int = 0  # settle and extend RPCs sent


class Conn:
    """One Consume stream: the room it was opened with (window, window_bytes)
    and what it delivered that is still held (count, bytes)."""

    def __init__(self, window: int, window_bytes: Optional[int]) -> None:
        self.window, self.window_bytes = window, window_bytes
        self.count = 0
        self.bytes = 0
        self.alive = True
        self.call: Any = None
        self.last_response = time.monotonic()
        self.heard = False  # it answered at least once
        self.pin = ""  # its pin of a pinned_client group: opened with, or given since

    def reserved(self) -> tuple[int, int]:
        """The room it takes from the subscriber's limits: its window while it
        is open (or what it holds, if more), what it holds once it has ended."""
        if self.alive:
            return max(self.window, self.count), max(self.window_bytes or 0, self.bytes)
        return self.count, self.bytes


class Held:
    """One lease the subscriber holds. Its lock serializes the extends and the
    settles of this delivery, so that a settle never races an extend and each
    uses the newest token."""

    __slots__ = (
        "msg", "pb", "token", "seq", "size", "delivered", "conn", "received", "deadline", "lead",
        "state", "lock", "outcome", "extending", "retry_at", "let_go", "lost", "finished",
        "closed", "successor", "primary", "uncounted",
    )

    def __init__(self, pb: Any, conn: Conn, now: float, wall: float) -> None:
        self.msg: Any = None  # the handler's message object, made by the engine
        self.pb = pb
        self.token: str = pb.token
        self.seq: int = pb.metadata.stream_seq
        self.delivered: int = pb.metadata.num_delivered
        self.size = len(pb.data)
        self.conn = conn
        self.received = now  # monotonic; max_lease counts from here
        left = pb.lease_deadline.ToNanoseconds() / 1e9 - wall
        self.deadline = now + left  # monotonic, from the gateway's wall-clock deadline
        self.lead = max(left / 3, 0.05)  # extend this long before the deadline
        self.state = WAITING
        self.lock = asyncio.Lock()
        self.outcome: Optional[tuple[str, Any]] = None  # the settle claimed for it
        self.extending = False
        self.retry_at = 0.0
        self.let_go = False
        self.lost = False
        self.finished = False  # done with: no handler, no lease
        self.uncounted = False  # its room is given back
        self.closed = False  # nak'ed by close
        self.successor: Optional[Held] = None  # a redelivery while it runs
        self.primary: Optional[Held] = None  # for a successor: the delivery in the handler

    def moved(self, token: str, deadline: Any, now: float, wall: float, kept: bool = False) -> None:
        """Takes the new token and deadline (a datetime) of an extend. kept:
        an extend with a duration, whose deadline is no lease length to
        learn the lead from."""
        self.token = token
        left = deadline.timestamp() - wall
        self.deadline = now + left
        if not kept:
            self.lead = max(self.lead, left / 3, 0.05)
        if self.msg is not None:
            self.msg.token, self.msg.lease_deadline = token, deadline


def monotonic_now() -> tuple[float, float]:
    return time.monotonic(), time.time()


async def acquire(lock: asyncio.Lock, timeout: float) -> bool:
    """Takes lock within timeout; unlike asyncio.wait_for (3.11), never
    leaves it taken when the time runs out just as it was given."""
    t = asyncio.ensure_future(lock.acquire())
    done, _ = await asyncio.wait({t}, timeout=timeout)
    if done:
        return True
    t.cancel()

    def release_if_taken(f: "asyncio.Future[bool]") -> None:
        if not f.cancelled() and f.exception() is None:
            lock.release()

    t.add_done_callback(release_if_taken)
    return False


@dataclasses.dataclass
class Options:
    max_messages: int = 100
    max_bytes: Optional[int] = None
    max_lease: float = 3600.0
    ack_batch: int = 100
    nak_delay: float = 1.0
    max_nak_delay: float = 600.0
    on_error: Optional[Callable[[Exception], Any]] = None
    timeout: float = 10.0
    # Priority groups, as for fetch: the group (unset: the consumer's only
    # one), overflow's min_pending and min_ack_pending, prioritized's
    # priority. A pinned_client group's pin is the subscriber's own (Streams).
    group: str = ""
    min_pending: int = 0
    min_ack_pending: int = 0
    priority: int = 0
