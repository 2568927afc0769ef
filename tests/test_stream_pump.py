"""How a streamed answer reaches the screen without holding the person's keys back: a burst
renders only what ends in view, thread measuring waits for the answer, the pump yields to
keys, and full garbage collections wait for the end of the turn (``assistant_message.py``,
``chat_layout.py``, ``collector.py``)."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import AsyncIterator

from scout_tui.tui import collector, delivery
from scout_tui.core import urgency
from scout_tui.tui.app import ScoutApp
from scout_tui.widgets import ChatView, Composer
from scout_tui.widgets import assistant_message as pump
from scout_tui.widgets import chat_layout
from scout_tui.widgets import markdown_render
from scout_tui.widgets.assistant_message import AssistantMessage
from scout_tui.widgets.chat_markdown import MarkdownChunk
from tests.app_helpers import HeldReply, make_app, send, settle
from tests.chat_helpers import ChatApp, finished, long_answer, rendered, text
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, anthropic_stream, split


def counting_renders(monkeypatch, answer_of) -> list[str]:
    """Record each markdown render (``render_lines``: prerender, measuring, drawing) made while
    the answer ``answer_of()`` is still being drawn; the list holds each render's thread name."""
    calls: list[str] = []
    real = markdown_render.render_lines

    def render_lines(source: str, width: int, code_theme: str):
        answer = answer_of()
        if answer is not None and answer.streamed:
            calls.append(threading.current_thread().name)
        return real(source, width, code_theme)

    monkeypatch.setattr(markdown_render, "render_lines", render_lines)
    return calls


def open_answer(app, received: str) -> tuple[ChatView, AssistantMessage]:
    """The app's chat and a new streaming answer in it that has received ``received``."""
    chat = app.query_one(ChatView)
    chat.assistant_delta("text", received)
    return chat, chat.current


async def test_a_burst_renders_only_the_chunks_it_ends_with_and_measures_the_rest_after(monkeypatch):
    body = long_answer(1500)  # ~175 KB arriving at once: more than two rounds show
    app = ChatApp()
    answers: list[AssistantMessage] = []
    renders = counting_renders(monkeypatch, lambda: answers[0] if answers else None)
    async with app.run_test(size=(100, 30)) as pilot:
        chat, answer = open_answer(app, body)
        answers.append(answer)
        chat.assistant_message(1, text("assistant", body))
        await finished(pilot, answers[0])
        chunks = list(answers[0].query(MarkdownChunk))
        assert len(chunks) >= 15 and answers[0].source == body
        assert chunks[0].source.startswith("## Part 0") and "## Part 1499" in chunks[-1].source
        # What scrolled past unseen was laid out, not rendered: each burst round's last chunks
        # (none in a round before the answer was laid out), the tail, and those the view came
        # near, only (every chunk was rendered before, in the stream).
        rounds = -(-len(body) // (pump.SKIP_CHUNKS * pump.CHUNK_CHARS))
        assert len(renders) <= pump.DRAWN_CHUNKS * rounds + 6 < len(chunks) // 2, renders
        # ...and those in threads: a chunk rendered on the event loop holds the keys back.
        assert renders.count("MainThread") <= 2, renders  # the first round, before the answer is laid out
        assert "The end." in rendered(chat)
        # Once the answer is drawn, the rest are measured (in a worker thread).
        await wait_until(pilot, lambda: all(c.measured(c.content_region.width) for c in chunks),
                         what="every chunk measured after the answer was drawn")


async def test_no_chunk_is_measured_in_a_thread_while_an_answer_streams(monkeypatch):
    app = ChatApp()
    answers: list[AssistantMessage] = []
    measured_while_streaming: list[int] = []
    real = chat_layout.measure_heights

    async def measure_heights(sources, width, code_theme):
        if answers and answers[0].streamed:
            measured_while_streaming.append(len(sources))
        return await real(sources, width, code_theme)

    monkeypatch.setattr(chat_layout, "measure_heights", measure_heights)
    async with app.run_test(size=(100, 30)) as pilot:
        chat, answer = open_answer(app, long_answer(600))
        answers.append(answer)
        # Streaming: the burst is shown, the answer stays open.
        await wait_until(pilot, lambda: not answers[0]._backlog and answers[0].query(MarkdownChunk),
                         what="the burst on screen")
        chat.assistant_delta("text", "\n\nMore.")  # another round, another layout
        await wait_until(pilot, lambda: "More." in answers[0]._live.source, what="the next round shown")
        await pilot.pause()
        assert measured_while_streaming == []
        assert any(not c.measured(c.content_region.width) for c in answers[0].query(MarkdownChunk))
        chat.assistant_message(1, text("assistant", long_answer(600) + "\n\nMore."))
        await finished(pilot, answers[0])
        await wait_until(pilot, lambda: sum(measured_while_streaming) == 0 and all(
            c.measured(c.content_region.width) for c in answers[0].query(MarkdownChunk)),
            what="the chunks measured once the answer is drawn")


def test_a_rounds_pause_keeps_streaming_to_its_share_of_the_loop_within_bounds():
    assert pump.pause(0.0) == pump.FLUSH_INTERVAL
    assert pump.pause(10.0) == pump.MAX_INTERVAL
    busy = 0.03  # a round and its frame kept the loop busy 30 ms
    assert abs(busy / (busy + pump.pause(busy)) - pump.STREAM_SHARE) < 1e-9


class Clock:
    """``time`` and ``asyncio.sleep`` for the pump: sleeping moves the clock on at once;
    ``keys`` are key presses (clock times) that happen as it passes them."""

    def __init__(self, app, keys: tuple[float, ...] = ()) -> None:
        self.now, self.app, self.keys, self.slept = 100.0, app, sorted(keys), 0.0

    def monotonic(self) -> float:
        return self.now

    def thread_time(self) -> float:
        return self.now

    async def sleep(self, seconds: float, *args) -> None:
        self.slept += seconds
        self.now += seconds
        while self.keys and self.keys[0] <= self.now:
            self.app.last_input = self.keys.pop(0)


async def test_rounds_let_keys_go_first_and_fall_between_them_while_the_person_types(monkeypatch):
    app = ChatApp()
    async with app.run_test() as pilot:
        chat, answer = open_answer(app, "Hello")

        async def wait(last_input: float | None, round_began: float, keys: tuple[float, ...] = ()) -> float:
            """Seconds ``_input_first`` waits at clock 100 for a round that began at ``round_began``."""
            clock = Clock(app, keys)
            app.last_input = last_input
            monkeypatch.setattr(pump, "time", clock)
            monkeypatch.setattr(pump.asyncio, "sleep", clock.sleep)
            try:
                await answer._input_first(round_began)
            finally:
                monkeypatch.undo()
            return clock.slept

        assert await wait(None, 99.9) == 0  # no key yet
        assert await wait(90.0, 99.9) == 0  # the last key was long ago: not typing
        # A key since the round began: its frame first.
        assert abs(await wait(99.98, 99.9) - (99.98 + pump.INPUT_GRACE - 100)) < 1e-9
        # Typing, no key since the round: wait for one (here at 100.05), then its frame.
        assert abs(await wait(99.8, 99.9, keys=(100.05,)) - (0.05 + pump.INPUT_GRACE)) < pump.KEY_POLL + 1e-9
        # ...but never past MAX_INTERVAL after the round began.
        assert abs(await wait(99.8, 99.9) - (99.9 + pump.MAX_INTERVAL - 100)) < 1e-9
        chat.assistant_message(1, text("assistant", "Hello"))
        await finished(pilot, answer)


async def test_a_round_changes_no_widget_before_a_key_typed_during_its_work_is_on_screen(monkeypatch):
    # The round's work in threads (cutting, rendering) may outlast a key: its frame goes first.
    app = ChatApp()
    async with app.run_test() as pilot:
        chat, answer = open_answer(app, "Hello")
        monkeypatch.setattr(pump, "KEY_WAIT", 3600.0)
        app.echo_pending = True
        waiting = asyncio.get_running_loop().create_task(answer._keys_first())
        for _ in range(5):
            await pilot.pause()
        assert not waiting.done()  # the key's frame is not out
        app.echo_pending = False
        await wait_until(pilot, waiting.done, what="the round goes on once the key is on screen")
        monkeypatch.setattr(pump, "KEY_WAIT", 0.0)  # ...and never waits longer than KEY_WAIT
        app.echo_pending = True
        await answer._keys_first()
        app.echo_pending = False
        chat.assistant_message(1, text("assistant", "Hello"))
        await finished(pilot, answer)


async def test_a_typed_key_is_pending_until_its_frame_is_drawn(tmp_path):
    app = make_app(tmp_path, None)
    async with app.run_test() as pilot:
        app.query_one(Composer).focus()
        assert not app.echo_pending
        app.input_arrived()  # as the driver's input thread does when it reads a key
        assert app.echo_pending
        await pilot.press("x")
        await wait_until(pilot, lambda: not app.echo_pending, what="the key's frame drawn")
        assert app.query_one(Composer).text == "x"


async def test_characters_typed_in_the_app_are_noted_for_the_pump_and_other_keys_are_not(tmp_path):
    app = make_app(tmp_path, None)
    async with app.run_test() as pilot:
        app.query_one(Composer).focus()
        await pilot.press("down", "enter")  # moving about, or sending, is not typing
        assert app.last_input is None
        before = time.monotonic()
        await pilot.press("x")
        assert app.last_input is not None and app.last_input >= before


@dataclass
class HeldTurn:
    """An app whose turn's answer streams, its end held back until ``reply.release()``; the
    collector's thresholds and freeze count from before the turn."""

    app: ScoutApp
    pilot: object
    reply: HeldReply
    thresholds: tuple[int, int, int]
    frozen: int


@asynccontextmanager
async def held_turn(tmp_path) -> AsyncIterator[HeldTurn]:
    collector.collect_and_freeze()  # an earlier app may have quit during a turn
    thresholds, frozen = gc.get_threshold(), gc.get_freeze_count()
    pieces = split(anthropic_stream(["word "] * 100), 64)
    reply = HeldReply(pieces, held_after=len(pieces) // 2)  # the answer's end waits for the test
    with LoopbackServer([reply]) as server:
        app = make_app(tmp_path, server)
        try:
            async with app.run_test() as pilot:
                await send(app, pilot, "hi")
                await wait_until(pilot, lambda: app.chat.current is not None, what="the answer streams")
                yield HeldTurn(app, pilot, reply, thresholds, frozen)
        finally:
            reply.release()
            collector.collect_and_freeze()


async def test_full_collections_wait_while_a_turn_streams_and_run_once_it_is_drawn(tmp_path):
    async with held_turn(tmp_path) as turn:
        assert collector.deferred() and gc.get_threshold()[2] == collector.TURN_GEN2
        turn.reply.release()
        await settle(turn.app, turn.pilot)
        await wait_until(turn.pilot, lambda: not collector.deferred() and gc.get_threshold() == turn.thresholds,
                         what="the thresholds restored once the answer is drawn")
        assert gc.get_freeze_count() > turn.frozen  # what survived the collection is frozen


async def test_the_turns_collection_waits_until_the_person_stops_typing(tmp_path):
    async with held_turn(tmp_path) as turn:
        app, pilot = turn.app, turn.pilot
        await pilot.press("a")  # the person types while the answer ends
        turn.reply.release()
        await settle(app, pilot)
        typed = app.last_input
        assert typed is not None
        if time.monotonic() < typed + delivery.QUIET_BEFORE_COLLECT:  # (a slow machine: already past)
            assert collector.deferred()
        await wait_until(pilot, lambda: not collector.deferred(), what="the collection once typing stopped")
        assert time.monotonic() >= typed + delivery.QUIET_BEFORE_COLLECT


async def test_the_text_keeps_its_width_when_the_conversation_first_outgrows_the_view():
    # A scrollbar appearing would narrow every message: each chunk in view rendered again,
    # on the event loop, in the middle of the first long answer.
    app = ChatApp()
    async with app.run_test(size=(100, 30)) as pilot:
        chat = app.query_one(ChatView)
        chat.assistant_message(1, text("assistant", "Short."))
        await pilot.pause()
        answer = list(chat.query(AssistantMessage))[-1]
        width = answer.content_region.width
        chat.assistant_message(3, text("assistant", long_answer(40)))
        await wait_until(pilot, lambda: chat.max_scroll_y > 0, what="the conversation outgrows the view")
        await pilot.pause()
        assert answer.content_region.width == width


async def test_a_round_holds_the_network_thread_from_its_mount_until_its_frame_is_out(monkeypatch):
    # The event loop lays out and draws a burst round alone: the parsing thread waits (urgency).
    monkeypatch.setattr(urgency, "HOLD_MAX", 3600.0)  # held until released, however slow the machine
    body = long_answer(1500)  # ~175 KB at once: burst rounds
    app = ChatApp()
    held_at_mount: list[float] = []
    real_mount_all = AssistantMessage.mount_all

    def mount_all(self, widgets, *args, **kwargs):
        widgets = list(widgets)
        if widgets and all(isinstance(w, MarkdownChunk) for w in widgets):  # a round's (not compose's)
            held_at_mount.append(urgency.held())
        return real_mount_all(self, widgets, *args, **kwargs)

    held_after_frame: list[float] = []
    real_pause = pump.pause

    def pause(busy: float) -> float:  # called once a round's frame is out
        held_after_frame.append(urgency.held())
        return real_pause(busy)

    monkeypatch.setattr(AssistantMessage, "mount_all", mount_all)
    monkeypatch.setattr(pump, "pause", pause)
    async with app.run_test(size=(100, 30)) as pilot:
        chat, answer = open_answer(app, body)
        chat.assistant_message(1, text("assistant", body))
        await finished(pilot, answer)
    assert len(held_at_mount) >= 2 and all(held > 0 for held in held_at_mount), held_at_mount
    # Each round's hold ended once its frame was out (the last one, once the answer was done).
    assert held_after_frame and all(held == 0.0 for held in held_after_frame), held_after_frame
    assert urgency.held() == 0.0
