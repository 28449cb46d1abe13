"""The blocking subscriber: the engine on an event loop of its own thread,
handlers in a thread pool."""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import dataclasses
import inspect
import queue
import threading
from typing import Any, Callable, Optional

import grpc

from jetgate import _client, _trace
from jetgate._client import Message, call_metadata
from jetgate._engine import Engine, Options
from jetgate._errors import SettleError
from jetgate._held import Held, Stats
from jetgate.v1 import consumer_pb2_grpc

DEFAULT_THREADS = 10  # handler threads when concurrency is None (at most max_messages), as Pub/Sub has


def _is_async(handler: Any) -> bool:
    """Whether handler (a function, or an object with __call__) is a coroutine function."""
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(getattr(handler, "__call__", None))


class Subscriber:
    """Runs a blocking handler on a consumer's messages; see Client.subscribe."""

    def __init__(
        self,
        address: str,
        api_key: Optional[str],
        tls: Optional[grpc.ChannelCredentials],
        stream: str,
        consumer: str,
        handler: Callable[[Message], Any],
        concurrency: Optional[int],
        opts: dict,
    ) -> None:
        if _is_async(handler):
            raise TypeError(
                f"handler {handler!r} is a coroutine function: the blocking subscriber calls handlers on threads "
                "and would ack what it returns unrun; subscribe with jetgate.aio.Client for coroutines"
            )
        self._opts = Options(**opts)
        self._concurrency = min(self._opts.max_messages, DEFAULT_THREADS) if concurrency is None else concurrency
        self._handler = handler
        self._stream, self._consumer = stream, consumer
        self._work: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        self._results: collections.deque = collections.deque()
        self._wake_lock = threading.Lock()
        self._wake_due = False
        self._workers = [
            threading.Thread(target=self._worker, name=f"jetgate-{consumer}-{i}", daemon=True)
            for i in range(self._concurrency)
        ]
        for w in self._workers:
            w.start()
        self._loop = asyncio.new_event_loop()
        self._engine: Optional[Engine] = None
        self._started = threading.Event()
        self._start_error: Optional[BaseException] = None
        self._closed = False
        self._close_fut: Optional[concurrent.futures.Future] = None
        self._close_timeout = 0.0
        self._stopped = threading.Event()  # the loop's thread has finished
        self._thread = threading.Thread(
            target=self._loop_main, args=(address, api_key, tls), name=f"jetgate-sub-{consumer}", daemon=True
        )
        self._thread.start()
        self._started.wait()
        if self._start_error is not None:
            raise self._start_error

    def _loop_main(self, address: str, api_key: Optional[str], tls: Any) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main(address, api_key, tls))
            left = asyncio.all_tasks(self._loop)  # gRPC's own, after the channel closed
            for t in left:
                t.cancel()
            self._loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        finally:
            self._loop.close()
            for _ in self._workers:  # each stops after the handler it runs, if any
                self._work.put(None)
            self._stopped.set()

    async def _main(self, address: str, api_key: Optional[str], tls: Any) -> None:
        channel = _client.channel(grpc.aio, address, tls)
        try:
            stub = consumer_pb2_grpc.ConsumerServiceStub(channel)
            self._engine = Engine(
                stub, self._stream, self._consumer, call_metadata(api_key), self._opts,
                self._concurrency, self._make_msg, self._invoke,
            )
            self._engine.start()
        except BaseException as e:
            self._start_error = e
            self._started.set()
            await channel.close()
            return
        self._started.set()
        await self._engine.stopped.wait()  # closed, or failed and closed itself
        await channel.close()

    def _make_msg(self, h: Held, pb: Any) -> Message:
        return Message(pb, self._stream, self._consumer, lambda _m, op, arg: self._settle(h, op, arg))

    async def _invoke(self, h: Held) -> Any:
        fut = self._loop.create_future()
        self._work.put((h.msg, fut))
        return await fut

    def _worker(self) -> None:
        """Runs handlers; their outcomes go back to the loop in bursts, with
        one wake-up of the loop for all that finished meanwhile."""
        while True:
            item = self._work.get()
            if item is None:
                return
            msg, fut = item
            try:
                r = _trace.call(self._handler, msg)
                if inspect.isawaitable(r):
                    # Unawaited, its work never ran: a failure, not an ack.
                    if inspect.iscoroutine(r):
                        r.close()
                    raise TypeError(
                        "the handler returned an awaitable, which the blocking subscriber cannot await: "
                        "subscribe with jetgate.aio.Client for coroutines"
                    )
                out = (r, None)
            except BaseException as e:  # the engine decides what a failure means
                out = (None, e)
            self._results.append((fut, out))
            with self._wake_lock:
                if self._wake_due:
                    continue
                self._wake_due = True
            try:
                self._loop.call_soon_threadsafe(self._deliver)
            except RuntimeError:  # closed: nobody waits for the outcome
                pass

    def _deliver(self) -> None:
        with self._wake_lock:
            self._wake_due = False
        while self._results:
            fut, (value, err) = self._results.popleft()
            if fut.done():
                continue
            if err is not None:
                fut.set_exception(err)
            else:
                fut.set_result(value)

    def _settle(self, h: Held, op: str, arg: Any) -> None:
        if threading.current_thread() is self._thread:
            raise RuntimeError("a blocking message cannot be settled from the subscriber's own loop")
        closed = SettleError("SUBSCRIBER_CLOSED", "the subscriber is closed", code="CANCELLED", token=h.token)
        if self._loop.is_closed():
            raise closed
        coro = self._engine.settle(h, op, arg)
        try:
            fut = asyncio.run_coroutine_threadsafe(coro, self._loop)
        except RuntimeError:  # the loop closed meanwhile
            coro.close()
            raise closed from None
        while True:
            try:
                return fut.result(timeout=0.5)
            except concurrent.futures.TimeoutError:
                if self._loop.is_closed():  # stopped before it ran
                    raise closed from None
            except concurrent.futures.CancelledError:
                raise closed from None

    @property
    def held(self) -> tuple[int, int]:
        """How many messages the subscriber holds now (in handlers or waiting
        for one), and their bytes: never more than max_messages and max_bytes."""
        return self._engine.held()

    @property
    def stats(self) -> Stats:
        """A copy of the subscriber's counters."""
        return dataclasses.replace(self._engine.stats)

    def close(self, mode: str = "drain", timeout: float = 30.0) -> None:
        """drain: running handlers finish (up to timeout) and the rest is
        nak'ed; nak: everything held is nak'ed at once. Either way it returns
        once the gateway has confirmed the naks, so nothing waits for ack_wait.
        Handlers still running after it returns cannot settle any more.
        Called from one of its own handlers or from on_error, it starts the
        close and returns at once (the drain then waits for that handler
        too); wait() says when it is done. A second close waits for the
        first."""
        if mode not in ("drain", "nak"):
            raise ValueError(f"close mode must be 'drain' or 'nak', not {mode!r}")
        me = threading.current_thread()
        # From a handler, or from on_error (which runs on the loop's own
        # thread): the close is started, not waited for.
        in_handler = me in self._workers or me is self._thread
        if not self._closed:
            self._closed = True
            self._engine.stop_dispatch()  # no handler starts after close, even before the loop runs it
            coro = self._engine.close(mode, timeout)
            try:
                self._close_fut = asyncio.run_coroutine_threadsafe(coro, self._loop)
            except RuntimeError:  # the loop is closed: the subscriber failed and stopped
                coro.close()
                return
            self._close_timeout = timeout
        if in_handler or self._close_fut is None:
            # A handler closing its own subscriber: the drain waits for this
            # handler, so waiting here would hold both until the timeout and
            # then nak the message it handled. On the loop's thread (on_error)
            # waiting would block the very loop that runs the close. wait()
            # says when it is done.
            return
        # close bounds each of its waits; the margin is for a stalled loop.
        try:
            self._close_fut.result(self._close_timeout + 60)
        except concurrent.futures.CancelledError:  # the loop stopped meanwhile
            pass
        self._thread.join(30)

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Blocks until the subscriber has stopped: closed (close from
        another thread, a signal handler, a timer) or failed on an error no
        retry can mend (the consumer does not exist, the caller may not read
        it), which it raises then. True once stopped; False when timeout
        (seconds) passed first."""
        if not self._stopped.wait(timeout):
            return False
        if self._engine is not None and self._engine.failure is not None:
            raise self._engine.failure
        return True

    def __enter__(self) -> "Subscriber":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
