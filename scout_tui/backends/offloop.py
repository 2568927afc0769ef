"""A backend's stream read off the caller's event loop, handed over in merged batches.

The network read, SSE parsing and JSON decoding of every backend run on one shared daemon
thread with its own asyncio loop (``network_loop``); the caller's loop (the UI's) only receives
what they produced. Events go into a list on that thread, consecutive text fragments of one
kind merged there as they come (``_run_key``); the caller is woken at most once per batch (one
``call_soon_threadsafe`` while the list is non-empty) and takes everything gathered so far:
during a 200 KB burst of 4-character deltas the caller sees a few large deltas per wake-up
instead of 50,000 events, and spends nothing on merging them. While a typed key waits for its
frame, the parsing pauses (``urgency``).

A backend's ``httpx.AsyncClient`` belongs to the loop that opened it: once a backend streams
through here, close it with ``aclose`` (which runs its ``aclose`` on the network loop).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator
from typing import Any, AsyncIterator, Callable
from contextlib import aclosing

from scout_tui.core import urgency
from scout_tui.backends.base import Backend, Request, StreamEvent, TextDelta, ThinkingDelta, ToolCallDelta

HOLD_POLL = 0.005
"""Seconds between looks at ``urgency.held`` while the network thread pauses for a key."""

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def network_loop() -> asyncio.AbstractEventLoop:
    """The network thread's event loop, started on first use (a daemon thread, ``scout-network``)."""
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, daemon=True, name="scout-network").start()
            _loop = loop
        return _loop


class _Handover:
    """Events crossing from the network thread to the caller's loop: a list under a lock, and an
    ``asyncio.Event`` of the caller's loop set once per batch."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.ready = asyncio.Event()
        self.closed = asyncio.Event()  # the producer's stream is closed (its finally ran)
        self._items: list[Any] = []
        self._run_key: tuple | None = None  # what the last item's run of fragments is (``_run_key``)
        self._run: list[str] = []  # fragments that continue the last item, not yet joined to it
        self._failure: BaseException | None = None
        self._done = False
        self._lock = threading.Lock()

    def _wake(self, event: asyncio.Event) -> None:
        try:
            self.loop.call_soon_threadsafe(event.set)
        except RuntimeError:  # the caller's loop is closed: nobody is waiting any more
            pass

    def put(self, item: Any) -> None:
        """Add ``item`` (on the network thread); a fragment that continues the last item's run
        (``_run_key``) is only appended to that run, so merging costs the caller nothing."""
        key = _run_key(item)
        with self._lock:
            first = not self._items
            if key is not None and key == self._run_key:
                self._run.append(_fragment(item))
            else:
                self._close_run()
                self._items.append(item)
                self._run_key, self._run = key, []
        if first:
            self._wake(self.ready)

    def _close_run(self) -> None:
        """Replace the last item by one carrying its own text followed by the open run's (under the lock)."""
        if self._run:
            self._items[-1] = _joined(self._items[-1], self._run)
            self._run = []

    def end(self, failure: BaseException | None) -> None:
        with self._lock:
            self._done, self._failure = True, failure
        self._wake(self.ready)
        self._wake(self.closed)

    def take(self) -> tuple[list[Any], bool, BaseException | None]:
        """Everything gathered so far, whether the stream ended, and how it failed (or None)."""
        with self._lock:
            self._close_run()
            items, self._items, self._run_key = self._items, [], None
            self.ready.clear()
            return items, self._done, self._failure


async def _produce(make: Callable[[], AsyncIterator[Any]], handover: _Handover) -> None:
    failure: BaseException | None = None
    stream = make()
    try:
        async for item in stream:
            handover.put(item)
            while pause := urgency.held():  # a typed key waits for its frame: let the UI have Python
                await asyncio.sleep(min(pause, HOLD_POLL))
    except BaseException as e:  # noqa: BLE001  (handed to the caller, which raises it)
        failure = e
    finally:
        try:
            if isinstance(stream, AsyncGenerator):  # a Backend.stream is one; any other iterator has nothing to close
                await stream.aclose()
        except Exception:  # it failed closing
            pass
        handover.end(failure)


async def batches(make: Callable[[], AsyncIterator[Any]]) -> AsyncGenerator[list[Any], None]:
    """Run the async iterator ``make()`` on the network loop; yield what it produced in batches
    (each non-empty, in order, runs of fragments merged: ``_run_key``). Its exception is raised here, after the batch before it.

    Cancelling the caller cancels the producer, and waits until its stream is closed.
    """
    handover = _Handover(asyncio.get_running_loop())
    future = asyncio.run_coroutine_threadsafe(_produce(make, handover), network_loop())
    try:
        while True:
            await handover.ready.wait()
            items, done, failure = handover.take()
            if items:
                yield items
            if done:
                if failure is not None:
                    raise failure
                return
    finally:
        if not future.done():
            future.cancel()
            await handover.closed.wait()


def _run_key(event: Any) -> tuple | None:
    """What runs of fragments ``event`` can join: consecutive ``TextDelta``, ``ThinkingDelta``,
    or ``ToolCallDelta`` of one call are one run; None for any other event."""
    if isinstance(event, ToolCallDelta):
        return (ToolCallDelta, event.index)
    if isinstance(event, (TextDelta, ThinkingDelta)):
        return (type(event),)
    return None


def _fragment(event: TextDelta | ThinkingDelta | ToolCallDelta) -> str:
    return event.fragment if isinstance(event, ToolCallDelta) else event.text


def _joined(event: TextDelta | ThinkingDelta | ToolCallDelta, run: list[str]) -> StreamEvent:
    """``event`` carrying its own text followed by the fragments ``run``."""
    if isinstance(event, ToolCallDelta):
        return ToolCallDelta(event.index, event.fragment + "".join(run))
    return type(event)(event.text + "".join(run))


async def stream(backend: Backend, request: Request) -> AsyncGenerator[StreamEvent, None]:
    """``backend.stream(request)`` read on the network thread: the same events, in order, with
    consecutive fragments of one run merged per batch (``_run_key``). Raises what the backend
    raises."""
    async with aclosing(batches(lambda: backend.stream(request))) as stream_:
        async for batch in stream_:
            for event in batch:
                yield event


async def aclose(backend: Backend) -> None:
    """Close ``backend``'s HTTP client on the loop it was opened on (the network loop)."""
    await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(backend.aclose(), network_loop()))
