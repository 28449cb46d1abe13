"""The subscriber's engine, on asyncio: Consume streams in, handlers run,
leases extended, settles batched, close in two modes. The blocking and the
asyncio subscribers both drive one Engine."""

from __future__ import annotations

import asyncio
import collections
import logging
import time
import weakref
from typing import Any, Awaitable, Callable, Optional

from jetgate import _ops
from jetgate._batch import Batcher
from jetgate._errors import Error, Final, HandlerError, LeaseDropped, LeaseLost, SettleError
from jetgate._held import RUNNING, SUCCESSOR, WAITING, Conn, Held, Options, Stats, acquire, monotonic_now
from jetgate._streams import Streams

log = logging.getLogger("jetgate")

FAIL_CLOSE_TIMEOUT = 30.0  # seconds a subscriber that failed gives its close
# A handler's settle refused because its lease was void (its stream broke and
# the gateway nak'ed what that stream held) is kept this long (seconds) for
# the message's redelivery, which takes it instead of running again.
OUTCOME_KEEP = 60.0
VOID_LEASE = ("LEASE_EXPIRED", "LEASE_SETTLED")


class Engine:
    """One subscription. invoke(held) runs the handler on held.msg;
    make_msg(held, pb) builds the message object the handler gets."""

    def __init__(
        self,
        stub: Any,
        stream: str,
        consumer: str,
        metadata: Any,
        opts: Options,
        concurrency: int,
        make_msg: Callable[[Held, Any], Any],
        invoke: Callable[[Held], Awaitable[Any]],
    ) -> None:
        if opts.max_messages < 1:
            raise ValueError("max_messages must be at least 1")
        if opts.max_bytes is not None and opts.max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        if opts.max_lease <= 0:
            raise ValueError("max_lease must be positive")
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1 (got {concurrency!r}); leave it out for the default")
        if not opts.nak_delay >= 0 or not opts.max_nak_delay >= opts.nak_delay:
            raise ValueError(
                f"nak_delay must be 0 or more and max_nak_delay at least nak_delay (got {opts.nak_delay!r}, {opts.max_nak_delay!r})")
        if not 1 <= opts.ack_batch <= _ops.MAX_TOKENS:
            raise ValueError(f"ack_batch must be from 1 to {_ops.MAX_TOKENS}, the gateway's most tokens a request (got {opts.ack_batch!r})")
        for name, most in (("min_pending", 2**63 - 1), ("min_ack_pending", 2**63 - 1), ("priority", 9)):
            v = getattr(opts, name)
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= most:
                raise ValueError(f"{name} must be a whole number from 0 to {most} (got {v!r})")
        if not isinstance(opts.group, str):
            raise ValueError(f"group must be a string (got {opts.group!r})")
        self.stream, self.consumer, self.opts = stream, consumer, opts
        self.stats = Stats()
        self._concurrency = max(1, concurrency)
        self._make_msg, self._invoke = make_msg, invoke
        self._batcher = Batcher(stub, stream, consumer, metadata, opts.ack_batch, opts.timeout, self.stats)
        self._streams = Streams(self, stub, metadata)
        self._by_seq: dict[int, Held] = {}  # the delivery of each message that a handler has or will get
        self._leases: set[Held] = set()  # every lease held: waiting, running, successors
        self._queue: collections.deque[Held] = collections.deque()
        self._running = 0
        self._tasks: set[asyncio.Task] = set()
        self._handlers: set[asyncio.Task] = set()
        self._cancelled_handlers: "weakref.WeakSet[asyncio.Task]" = weakref.WeakSet()  # by cancel_handlers
        self._stop_dispatch = False
        self._closed = False
        self._keeper_wake = asyncio.Event()
        self._idle = asyncio.Event()  # no handler runs
        self._idle.set()
        self._settling = 0  # handlers finished whose settle is on its way
        self._settled = asyncio.Event()  # none is
        self._settled.set()
        self._keeper: Optional[asyncio.Task] = None
        self._keeper_stop = False
        self._close_task: Optional[asyncio.Task] = None
        # By stream sequence: the outcome of a handler whose settle the
        # gateway refused for a void lease, until its redelivery comes.
        self._outcomes: dict[int, tuple[tuple[str, Any], float, SettleError]] = {}
        self.cancel_on_nak = False  # asyncio: a nak close cancels the handlers still running
        self.failure: Optional[Error] = None  # the error that stopped the subscriber, if one did
        self.stopped = asyncio.Event()  # set once close has finished

    # --- lifetime -----------------------------------------------------------

    def start(self) -> None:
        self._keeper = asyncio.get_running_loop().create_task(self._keep())
        self._streams.start()

    async def close(self, mode: str, timeout: float) -> None:
        """drain: running handlers finish (up to timeout), the rest is nak'ed;
        nak: everything held is nak'ed at once. Returns once the naks are
        confirmed, so nothing held waits for ack_wait. A second close waits
        for the first. Called from one of this subscriber's own handlers it
        starts the close and returns: a drain waits for that handler, which
        could not finish while it waited for the drain."""
        if mode not in ("drain", "nak"):
            raise ValueError(f"close mode must be 'drain' or 'nak', not {mode!r}")
        if self._close_task is None:
            self._stop_dispatch = True
            self._close_task = asyncio.get_running_loop().create_task(self._close(mode, timeout))
        if asyncio.current_task() in self._handlers:
            return
        await asyncio.shield(self._close_task)

    def stop_dispatch(self) -> None:
        """Starts no more handlers (a plain flag: the blocking subscriber sets
        it from the closing thread before its close reaches the loop)."""
        self._stop_dispatch = True

    def fail(self, err: Error) -> None:
        """Stops the subscriber for an error no retry can mend: everything
        held is nak'ed, and wait() raises err."""
        if self._close_task is not None:
            return
        self.failure = err
        self._spawn(self.close("nak", FAIL_CLOSE_TIMEOUT))

    async def _close(self, mode: str, timeout: float) -> None:
        try:
            await self._close_now(mode, timeout)
        finally:
            if mode == "nak" and self.cancel_on_nak:
                self.cancel_handlers()
            self.stopped.set()

    async def _close_now(self, mode: str, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        self._stop_dispatch = True
        if mode == "drain":
            # Handlers finished, and their settles landed: one may wait for
            # the message's lock behind the keeper's extend of its lease.
            for done in (self._idle, self._settled):
                try:
                    await asyncio.wait_for(done.wait(), max(0.0, end - loop.time()))
                except asyncio.TimeoutError:
                    pass
        # The settles of handlers that finished go first: a stream that ends
        # has the gateway nak what it held, and a settle still lingering in
        # its batch would then be refused and its message delivered again.
        await self._batcher.flush_all()
        # Streams end next: after that nothing new arrives, and the gateway
        # naks what they held, which the naks below only make quicker.
        await self._streams.stop()
        self._closed = True
        naks = [self._nak_for_close(h, end) for h in list(self._leases)]
        if naks:
            await asyncio.gather(*naks, return_exceptions=True)
        await self._batcher.flush_all()
        for _, _, err in self._outcomes.values():  # their redeliveries never came
            self.stats.settle_errors += 1
            self._report(err)
        self._outcomes.clear()
        # Loops stop by a flag, not by cancel: asyncio.wait_for (3.11) can
        # swallow a cancel that meets the event it waits for.
        self._keeper_stop = True
        self._keeper_wake.set()
        if self._keeper is not None:
            await asyncio.gather(self._keeper, return_exceptions=True)

    def cancel_handlers(self) -> None:
        """Cancels the handlers still running (asyncio: after a nak close)."""
        for t in list(self._handlers):
            self._cancelled_handlers.add(t)
            t.cancel()

    async def _nak_for_close(self, h: Held, end: float) -> None:
        loop = asyncio.get_running_loop()
        if not await acquire(h.lock, max(0.01, end - loop.time())):
            return
        try:
            if h.outcome is not None or h.finished:
                return
            h.outcome, h.closed = ("nak", 0.0), True
            self._uncount(h)
            r = await self._batcher.submit("nak", 0.0, h.token)
            if r is None:
                self.stats.naked += 1
        finally:
            h.lock.release()
        if h.state != RUNNING:
            self._release(h)

    # --- arrivals and flow control -------------------------------------------

    def receive(self, conn: Conn, pb: Any) -> None:
        """Takes one delivery of a stream. A redelivery of a message in a
        handler waits beside it and gets its outcome; one of a message still
        waiting replaces it (its old token is void)."""
        now, wall = monotonic_now()
        h = Held(pb, conn, now, wall)
        conn.count += 1
        conn.bytes += h.size
        self.stats.received += 1
        self._leases.add(h)
        prev = self._by_seq.get(h.seq)
        if prev is not None and prev.state == RUNNING and not prev.finished:
            old, prev.successor = prev.successor, h
            h.state, h.primary = SUCCESSOR, prev
            self.stats.merged += 1
            if old is not None:
                self._release(old)
        else:
            if prev is not None and prev.state == WAITING:
                prev.outcome = ("superseded", None)
                self._release(prev)
            h.msg = self._make_msg(h, pb)
            self._by_seq[h.seq] = h
            kept = self._outcomes.pop(h.seq, None)
            if kept is not None:  # its handler ran and finished on a void lease
                self._spawn(self._settle_kept(h, kept[0]))
            else:
                self._queue.append(h)
        self._keeper_wake.set()
        self._pump()

    def held(self) -> tuple[int, int]:
        """The messages (and their bytes) held now: in handlers, waiting for
        one, or waiting beside one as its redelivery."""
        n = b = 0
        for c in list(self._streams.conns):
            n += c.count
            b += c.bytes
        return n, b

    def free(self) -> tuple[int, Optional[int]]:
        """The room no stream has taken: messages, and bytes (None: no limit)."""
        n = b = 0
        for c in self._streams.conns:
            cn, cb = c.reserved()
            n += cn
            b += cb
        free_b = None if self.opts.max_bytes is None else self.opts.max_bytes - b
        return self.opts.max_messages - n, free_b

    def _release(self, h: Held) -> None:
        """Gives back h's room, once."""
        if h.finished:
            return
        h.finished = True
        self._leases.discard(h)
        if self._by_seq.get(h.seq) is h:
            del self._by_seq[h.seq]
        if h.primary is not None and h.primary.successor is h:
            h.primary.successor = None
        self._uncount(h)

    def _uncount(self, h: Held) -> None:
        """Takes h out of its stream's count, once: when its settle is sent
        (the gateway gives the stream its credit back as it takes the
        settle, maybe before its answer is read) or when it is let go."""
        if h.uncounted:
            return
        h.uncounted = True
        h.conn.count -= 1
        h.conn.bytes -= h.size
        self._streams.changed()

    # --- handlers -------------------------------------------------------------

    def _pump(self) -> None:
        while self._queue and self._running < self._concurrency and not self._stop_dispatch:
            h = self._queue.popleft()
            if h.finished or h.outcome is not None or h.let_go or h.lost:
                continue
            h.state = RUNNING
            self._running += 1
            self._idle.clear()
            t = asyncio.get_running_loop().create_task(self._run(h))
            self._handlers.add(t)
            t.add_done_callback(self._handlers.discard)

    def _spawn(self, coro: Awaitable[Any]) -> None:
        t = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    def _nak_delay(self, h: Held) -> float:
        n = max(1, h.delivered)
        return min(self.opts.nak_delay * (2 ** min(n - 1, 30)), self.opts.max_nak_delay)

    async def _run(self, h: Held) -> None:
        try:
            try:
                await self._invoke(h)
                op: tuple[str, Any] = ("ack", None)
                self.stats.handled += 1
            except Final as e:
                op = ("term", e.reason)
                self.stats.handler_errors += 1
                self._report(HandlerError("HANDLER_FINAL", f"message {h.seq}: {e.reason}"), e)
            except BaseException as e:  # the handler's failure is the message's nak
                if isinstance(e, asyncio.CancelledError) and self._cancelled():
                    raise
                # Anything else it raised (a CancelledError of a future it
                # awaited, SystemExit from a blocking handler) is its own.
                op = ("nak", self._nak_delay(h))
                self.stats.handler_errors += 1
                self._report(HandlerError("HANDLER_FAILED", f"message {h.seq}: {e!r}"), e)
        except BaseException:
            self._handler_done()
            self._release(h)
            raise
        # The handler's slot is free while its settle is on its way (a
        # drain waits for it: _settled).
        self._settling += 1
        self._settled.clear()
        self._handler_done()
        try:
            await self.settle(h, op[0], op[1], explicit=False)
        except SettleError as e:
            if not self._keep_outcome(h, op, e):
                self.stats.settle_errors += 1
                self._report(e)
        finally:
            self._settling -= 1
            if self._settling == 0:
                self._settled.set()
            await self._answer_successor(h)
            self._release(h)

    def _keep_outcome(self, h: Held, op: tuple[str, Any], err: SettleError) -> bool:
        """Keeps the outcome of h's handler for its message's redelivery
        when the gateway refused its settle for a void lease: the stream it
        came on broke and the gateway nak'ed it, and the redelivery comes on
        the next stream only once there is room, often after this refusal.
        Reported as a settle error only if no redelivery comes in time."""
        if err.reason not in VOID_LEASE or h.let_go or h.closed or self._closed or op[0] not in ("ack", "nak", "term"):
            return False
        old = self._outcomes.pop(h.seq, None)
        if old is not None:
            self.stats.settle_errors += 1
            self._report(old[2])
        self._outcomes[h.seq] = (op, time.monotonic() + OUTCOME_KEEP, err)
        self._keeper_wake.set()
        return True

    async def _settle_kept(self, h: Held, op: tuple[str, Any]) -> None:
        """Settles a redelivery with the outcome kept for its message."""
        self.stats.merged += 1
        try:
            await self._settle_locked(h, op[0], op[1])
        except SettleError as e:
            self.stats.settle_errors += 1
            self._report(e)
        finally:
            self._release(h)

    def _cancelled(self) -> bool:
        """Whether the running handler's task was cancelled, rather than its
        handler meeting a CancelledError of its own: by a nak close, which
        gave its message back (cancel_handlers), or by the loop ending."""
        task = asyncio.current_task()
        if task in self._cancelled_handlers:
            return True
        cancelling = getattr(task, "cancelling", None)  # Python 3.11 and later
        return cancelling is not None and cancelling() > 0

    def _handler_done(self) -> None:
        self._running -= 1
        if self._running == 0:
            self._idle.set()
        self._pump()

    async def _answer_successor(self, h: Held) -> None:
        """Gives a redelivery that came while h ran the outcome of h; but
        after h gave its message back at once (a nak without delay, or an
        extend by 0) it is the redelivery asked for: it runs next, as a new
        message (a nak of it would only bring it back again, a delivery
        burnt each round). So does the redelivery of a lease let go at
        max_lease: the handler's run of it did not count."""
        while h.successor is not None:
            s = h.successor
            again = h.let_go or h.outcome is not None and h.outcome[0] == "nak" and not h.outcome[1]
            if again and not (h.closed or self._stop_dispatch):
                h.successor, s.primary = None, None
                s.state = WAITING
                s.msg = self._make_msg(s, s.pb)
                self._by_seq[s.seq] = s
                self._queue.append(s)
                self._pump()
                return
            op = h.outcome if h.outcome and h.outcome[0] in _ops.OPS and not h.let_go else ("nak", 0.0)
            try:
                await self._settle_locked(s, op[0], op[1])
            except SettleError as e:
                self._report(e)
            self._release(s)

    # --- settles and extends ----------------------------------------------------

    async def settle(self, h: Held, op: str, arg: Any, explicit: bool = True) -> None:
        """Settles h (and a redelivery waiting beside it) once; the first
        settle wins: a later one does nothing when it came from the engine,
        and raises ALREADY_SETTLED when it came from the handler."""
        wire = (op, arg)  # what is sent: an extend by 0 gives the message back
        if op == "extend":
            if arg is None or arg != 0:
                return await self._extend_now(h, arg)
            op, arg = "nak", 0.0
        async with h.lock:
            if h.closed or self._closed and h.outcome is None:
                raise SettleError("SUBSCRIBER_CLOSED", "the subscriber was closed and nak'ed the message", code="CANCELLED", token=h.token)
            if h.outcome is not None:
                if explicit and h.outcome != (op, arg):
                    raise SettleError("ALREADY_SETTLED", f"the message was already {h.outcome[0]}'ed", code="FAILED_PRECONDITION", token=h.token)
                return
            h.outcome = (op, arg)
            self._uncount(h)
            err = await self._batcher.submit(*wire, h.token)
            if isinstance(err, _ops.Extended):  # given back by an extend by 0
                if h.msg is not None:
                    h.msg.lease_deadline = err.deadline
                err = None
            s = h.successor
            if s is not None and err is not None and not h.let_go:
                # The handler's lease was void and its redelivery is ours:
                # the redelivery takes the outcome instead (not of a lease
                # let go at max_lease: its redelivery runs anew).
                try:
                    await self._settle_locked(s, op, arg)
                    err = None
                except SettleError:
                    pass
                self._release(s)
            self._count(op, err is None)
            if isinstance(err, SettleError):
                raise err

    async def _settle_locked(self, h: Held, op: str, arg: Any) -> None:
        async with h.lock:
            if h.outcome is not None:
                return
            h.outcome = (op, arg)
            self._uncount(h)
            err = await self._batcher.submit(op, arg, h.token)
            self._count(op, err is None)
            if isinstance(err, SettleError):
                raise err

    def _count(self, op: str, ok: bool) -> None:
        if ok and op in ("ack", "nak", "term"):
            setattr(self.stats, op + "ed", getattr(self.stats, op + "ed") + 1)

    async def _extend_now(self, h: Held, duration: Optional[float]) -> None:
        """The handler's own extend. After one with a duration the keeper
        leaves the lease alone until near the deadline asked for, then
        extends it one ack_wait at a time again, up to max_lease."""
        async with h.lock:
            if h.outcome is not None or h.closed:
                raise SettleError("ALREADY_SETTLED", "the message is settled; there is no lease to extend", code="FAILED_PRECONDITION", token=h.token)
            r = await self._batcher.submit("extend", duration, h.token)
            if isinstance(r, SettleError):
                raise r
            h.moved(r.token, r.deadline, *monotonic_now(), kept=duration is not None)
            self.stats.extended += 1
        self._keeper_wake.set()

    async def _keep(self) -> None:
        """Extends each lease held a third of its lease before its deadline,
        until it has been held max_lease; then lets it go."""
        while not self._keeper_stop:
            now = time.monotonic()
            next_at = now + 1.0
            for seq, (_, until, err) in list(self._outcomes.items()):
                if now >= until:  # its redelivery did not come
                    del self._outcomes[seq]
                    self.stats.settle_errors += 1
                    self._report(err)
            for h in list(self._leases):
                if h.extending or h.finished or h.let_go or h.outcome is not None:
                    continue
                if now >= h.deadline:
                    self._lose(h, "LEASE_EXPIRED", "its deadline passed before an extend succeeded")
                    continue
                due = max(h.deadline - h.lead, h.retry_at)
                if now < due:
                    next_at = min(next_at, due)
                elif now - h.received >= self.opts.max_lease:
                    self._let_go(h)
                else:
                    h.extending = True
                    self._spawn(self._extend_held(h))
            self._keeper_wake.clear()
            try:
                await asyncio.wait_for(self._keeper_wake.wait(), max(0.005, next_at - time.monotonic()))
            except asyncio.TimeoutError:
                pass

    async def _extend_held(self, h: Held) -> None:
        try:
            async with h.lock:
                if h.outcome is not None or h.finished or h.let_go or h.lost:
                    return
                r = await self._batcher.submit("extend", None, h.token)
                if isinstance(r, SettleError):
                    if r.code in ("UNAVAILABLE", "DEADLINE_EXCEEDED", "CANCELLED", "RESOURCE_EXHAUSTED"):
                        h.retry_at = time.monotonic() + 0.25
                    else:
                        self._lose(h, r.reason, r.message)
                    return
                h.moved(r.token, r.deadline, *monotonic_now())
                self.stats.extended += 1
        finally:
            h.extending = False
            self._keeper_wake.set()

    def _lose(self, h: Held, reason: str, why: str) -> None:
        if h.lost:
            return
        h.lost = True
        self.stats.leases_lost += 1
        self._report(LeaseLost(reason, f"message {h.seq} (delivery {h.delivered}): {why}"))
        if h.state != RUNNING:  # a running one keeps its room until its handler returns
            self._release(h)

    def _let_go(self, h: Held) -> None:
        """Lets go of a lease held for max_lease: nak'ed, so that the gateway
        stops keeping it alive (the subscriber's streams ask it to:
        auto_extend) and JetStream redelivers it now. A handler still
        running on it finishes, but its settle is refused; the redelivery
        waits beside it, never in a second handler, and runs once it is done
        (_answer_successor), as the TypeScript subscriber's does. A message
        let go before its handler began never runs."""
        h.let_go = True
        self.stats.leases_dropped += 1
        self._report(LeaseDropped("MAX_LEASE", f"message {h.seq} held for max_lease ({self.opts.max_lease}s): let go"))
        self._spawn(self._nak_let_go(h))

    async def _nak_let_go(self, h: Held) -> None:
        async with h.lock:
            if h.outcome is not None or h.finished:
                return
            await self._batcher.submit("nak", 0.0, h.token)
            self._uncount(h)
        if h.state != RUNNING:
            self._release(h)

    def _report(self, err: Exception, cause: Optional[BaseException] = None) -> None:
        """Passes err to on_error, or without one logs it to the "jetgate"
        logger: a handler's failure as an error with its traceback, the rest
        (leases let go or lost, failed settles, stream breaks) as warnings."""
        if cause is not None:
            err.__cause__ = cause
        cb = self.opts.on_error
        if cb is None:
            handler = isinstance(err, HandlerError)
            level = logging.ERROR if handler or err is self.failure else logging.WARNING
            log.log(level, "jetgate subscriber %s/%s: %s", self.stream, self.consumer, err, exc_info=cause if handler else None)
            return
        try:
            cb(err)
        except Exception:  # an error callback's own failure must not stop the subscriber
            log.exception("jetgate subscriber %s/%s: on_error raised on %s", self.stream, self.consumer, err)
