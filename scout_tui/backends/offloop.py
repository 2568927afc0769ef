"""A backend's stream read off the caller's event loop, handed over in merged batches.

The network read, SSE parsing and JSON decoding of every backend run on one shared daemon
thread with its own asyncio loop (``network_loop``); the caller's loop (the UI's) only receives
what they produced. Events go into a list on that thread; the caller is woken at most once per
batch (one ``call_soon_threadsafe`` while the list is non-empty), takes everything gathered so
far, and gets consecutive text fragments of one kind merged (``merged``): during a 200 KB burst
of 4-character deltas the caller sees a few large deltas per wake-up instead of 50,000 events.

A backend's ``httpx.AsyncClient`` belongs to the loop that opened it: once a backend streams
through here, close it with ``aclose`` (which runs its ``aclose`` on the network loop).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, AsyncIterator, Callable

from scout_tui.backends.base import Backend, Request, StreamEvent, TextDelta, ThinkingDelta, ToolCallDelta

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
        self._failure: BaseException | None = None
        self._done = False
        self._lock = threading.Lock()

    def _wake(self, event: asyncio.Event) -> None:
        try:
            self.loop.call_soon_threadsafe(event.set)
        except RuntimeError:  # the caller's loop is closed: nobody is waiting any more
            pass

    def put(self, item: Any) -> None:
        with self._lock:
            first = not self._items
            self._items.append(item)
        if first:
            self._wake(self.ready)

    def end(self, failure: BaseException | None) -> None:
        with self._lock:
            self._done, self._failure = True, failure
        self._wake(self.ready)
        self._wake(self.closed)

    def take(self) -> tuple[list[Any], bool, BaseException | None]:
        """Everything gathered so far, whether the stream ended, and how it failed (or None)."""
        with self._lock:
            items, self._items = self._items, []
            self.ready.clear()
            return items, self._done, self._failure


async def _produce(make: Callable[[], AsyncIterator[Any]], handover: _Handover) -> None:
    failure: BaseException | None = None
    stream = make()
    try:
        async for item in stream:
            handover.put(item)
    except BaseException as e:  # noqa: BLE001  (handed to the caller, which raises it)
        failure = e
    finally:
        try:
            await stream.aclose()  # type: ignore[attr-defined]
        except Exception:  # not an async generator (no aclose), or it failed closing
            pass
        handover.end(failure)


async def batches(make: Callable[[], AsyncIterator[Any]]) -> AsyncIterator[list[Any]]:
    """Run the async iterator ``make()`` on the network loop; yield what it produced in batches
    (each non-empty, in order). Its exception is raised here, after the batch before it.

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


def merged(events: list[StreamEvent]) -> list[StreamEvent]:
    """``events`` with each run of consecutive ``TextDelta``, ``ThinkingDelta``, or
    ``ToolCallDelta`` of one call joined into one event (order otherwise kept)."""
    out: list[StreamEvent] = []
    run: list[str] = []
    for event in events:
        last = out[-1] if out else None
        if type(event) is type(last) and (
            isinstance(event, (TextDelta, ThinkingDelta))
            or (isinstance(event, ToolCallDelta) and event.index == last.index)  # type: ignore[union-attr]
        ):
            run.append(event.fragment if isinstance(event, ToolCallDelta) else event.text)  # type: ignore[union-attr]
            continue
        _close_run(out, run)
        out.append(event)
        run = []
    _close_run(out, run)
    return out


def _close_run(out: list[StreamEvent], run: list[str]) -> None:
    """Replace the last event of ``out`` by one carrying its own text followed by ``run``."""
    if not run:
        return
    last = out[-1]
    if isinstance(last, ToolCallDelta):
        out[-1] = ToolCallDelta(last.index, last.fragment + "".join(run))
    else:
        out[-1] = type(last)(last.text + "".join(run))  # type: ignore[union-attr,call-arg]


async def stream(backend: Backend, request: Request) -> AsyncIterator[StreamEvent]:
    """``backend.stream(request)`` read on the network thread: the same events, in order, with
    consecutive fragments merged per batch (``merged``). Raises what the backend raises."""
    async for batch in batches(lambda: backend.stream(request)):
        for event in merged(batch):
            yield event


async def aclose(backend: Backend) -> None:
    """Close ``backend``'s HTTP client on the loop it was opened on (the network loop)."""
    await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(backend.aclose(), network_loop()))
