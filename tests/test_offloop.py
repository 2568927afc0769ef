"""A backend's stream is read on the network thread and handed to the caller's loop in merged
batches (``backends/offloop.py``)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from scout_tui.core import urgency
from scout_tui.backends import offloop
from scout_tui.backends.base import (Backend, Completed, Request, TextDelta, ThinkingDelta, ToolCallDelta,
                                     ToolCallStarted, Usage)
from scout_tui.core.bus import MessageDelta
from scout_tui.core.errors import ModelError
from tests.agent_helpers import collect, make_agent
from tests.conftest import until
from tests.loopback import LoopbackServer, Reply, anthropic_stream

REQUEST = Request(model="m", messages=[{"role": "user", "content": "hi"}], system="", tools=[], max_tokens=10)
DONE = Completed({"role": "assistant", "content": [{"type": "text", "text": "x"}]}, Usage(), "end_turn")


class Scripted(Backend):
    """Yields ``events`` from ``stream``, noting the thread it ran on; ``gate`` (when set) holds
    the stream before its last event until the test opens it; ``closed`` is set by its finally."""

    def __init__(self, events: list, fail: BaseException | None = None, block_after: int | None = None) -> None:
        super().__init__(model="m")
        self.events, self.fail, self.block_after = events, fail, block_after
        self.threads: set[str] = set()
        self.produced = threading.Event()
        self.closed = threading.Event()
        self.hold = asyncio.Event()  # of the network loop, never set: a stream that waits for ever

    async def stream(self, request: Request):
        try:
            for n, event in enumerate(self.events):
                self.threads.add(threading.current_thread().name)
                if n == self.block_after:
                    self.produced.set()
                    await self.hold.wait()
                yield event
            self.produced.set()
            if self.fail is not None:
                raise self.fail
        finally:
            self.closed.set()


async def events_of(backend: Backend) -> list:
    return [event async for event in offloop.stream(backend, REQUEST)]


def test_the_stream_runs_on_the_network_thread_not_the_callers():
    backend = Scripted([TextDelta("a"), DONE])
    assert asyncio.run(events_of(backend))[-1] is DONE
    assert backend.threads == {"scout-network"} != {threading.current_thread().name}


def test_fragments_produced_while_the_caller_is_busy_arrive_merged_in_one_batch():
    pieces = [TextDelta(f"{n:04d}") for n in range(2000)]
    backend = Scripted(pieces + [DONE])

    async def main() -> list:
        got = []
        async for event in offloop.stream(backend, REQUEST):
            if not got:  # the caller's loop is blocked until the network thread has produced all
                until(backend.produced.is_set, what="the backend produced its events")
            got.append(event)
        return got

    got = asyncio.run(main())
    assert "".join(e.text for e in got if isinstance(e, TextDelta)) == "".join(p.text for p in pieces)
    assert len(got) <= 3  # the first fragment(s), then everything else as one delta, then Completed
    assert got[-1] is DONE


def test_merging_keeps_order_and_joins_only_runs_of_one_kind_and_one_call():
    events = [ThinkingDelta("th"), ThinkingDelta("ink"), TextDelta("He"), TextDelta("llo"),
              ToolCallStarted(0, "t1", "read"), ToolCallDelta(0, '{"pa'), ToolCallDelta(0, 'th": 1}'),
              ToolCallDelta(1, "{}"), TextDelta("!"), DONE]
    loop = asyncio.new_event_loop()  # the caller's, woken by the first put (never run here)
    try:
        handover = offloop._Handover(loop)
        for event in events[:3]:
            handover.put(event)
        first, _, _ = handover.take()  # a run still open when taken is closed then
        for event in events[3:]:
            handover.put(event)
        rest, done, failure = handover.take()
    finally:
        loop.close()
    assert first == [ThinkingDelta("think"), TextDelta("He")]
    assert rest == [TextDelta("llo"), ToolCallStarted(0, "t1", "read"), ToolCallDelta(0, '{"path": 1}'),
                    ToolCallDelta(1, "{}"), TextDelta("!"), DONE]
    assert not done and failure is None


def test_the_backends_error_is_raised_to_the_caller_after_what_came_before_it():
    error = ModelError("overloaded", kind="overloaded")
    backend = Scripted([TextDelta("part")], fail=error)
    got: list = []

    async def main() -> None:
        async for event in offloop.stream(backend, REQUEST):
            got.append(event)

    with pytest.raises(ModelError) as raised:
        asyncio.run(main())
    assert raised.value is error and got == [TextDelta("part")]


def test_cancelling_the_caller_closes_the_stream_on_the_network_thread_before_it_returns():
    backend = Scripted([TextDelta("a"), TextDelta("b"), DONE], block_after=1)

    async def main() -> None:
        task = asyncio.create_task(events_of(backend))
        await asyncio.to_thread(backend.produced.wait)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert backend.closed.is_set()  # the network side's finally ran before the cancel returned

    asyncio.run(main())


def test_an_agent_turn_against_a_real_server_gets_every_character_through_the_network_thread(tmp_path):
    text = "".join(f"line {n}\n" for n in range(3000))
    pieces = [text[i:i + 4] for i in range(0, len(text), 4)]
    with LoopbackServer([Reply(anthropic_stream(pieces))]) as server:
        agent = make_agent(server, tmp_path)

        async def turn() -> list:
            try:
                return await collect(agent, [], "hi")
            finally:
                await offloop.aclose(agent.backend)

        events = asyncio.run(turn())
    deltas = [e.text for e in events if isinstance(e, MessageDelta)]
    assert "".join(deltas) == text
    assert events[-1].stop_reason == "end_turn"
    assert agent.backend._client is None  # closed on the loop that opened it


def test_a_key_holds_the_network_thread_until_it_is_released(monkeypatch):
    monkeypatch.setattr(urgency, "HOLD_MAX", 3600.0)  # held until released, however slow the machine
    pieces = [TextDelta(f"{n:04d}") for n in range(200)]
    backend = Scripted(pieces + [DONE])

    async def main() -> list:
        got = []
        async for event in offloop.stream(backend, REQUEST):
            if not got:  # the producer put this, then found the hold: nothing more is produced
                assert event == TextDelta("0000")
                urgency.release()
            got.append(event)
        return got

    urgency.hold(3600.0)
    try:
        got = asyncio.run(main())
    finally:
        urgency.release()
    assert "".join(e.text for e in got if isinstance(e, TextDelta)) == "".join(p.text for p in pieces)
    assert got[-1] is DONE
