"""Typed keys first (issue 13): the input thread notes a typed key before the event loop gets to
it (``input_first.py``), and background threads pause while the key waits for its frame
(``urgency.py``; the network thread's pause is tested in test_offloop.py)."""

from __future__ import annotations

import asyncio
import sys
import threading
from contextlib import asynccontextmanager

import pytest
from textual import events
from textual.app import App
from textual.drivers._writer_thread import WriterThread
from textual.drivers.linux_driver import LinuxDriver
from textual.message_pump import MessagePump

from scout_tui.core import urgency
from scout_tui.tui.input_first import KeyFirstScreen, TypedKeys, noting_input
from scout_tui.widgets import Composer
from tests.app_helpers import make_app
from tests.conftest import until, wait_until


class Recorder:
    """A driver stand-in: ``process_message`` records what the real one would send on."""

    def __init__(self, app) -> None:
        self._app, self.sent = app, []

    def process_message(self, message) -> None:
        self.sent.append(message)


class Noted:
    def __init__(self) -> None:
        self.arrivals = 0

    def input_arrived(self) -> None:
        self.arrivals += 1


def test_the_drivers_input_thread_notes_typed_keys_and_pastes_and_passes_every_event_on():
    app = Noted()
    driver = noting_input(Recorder)(app)
    typed = [events.Key("x", "x"), events.Paste("pasted")]
    other = [events.Key("down", None), events.Key("enter", "\r"), events.Resize.from_dimensions((80, 24), None)]
    for message in [*other, *typed]:
        driver.process_message(message)
    assert app.arrivals == len(typed)
    assert driver.sent == [*other, *typed]


def test_the_app_runs_its_platforms_driver_with_keys_noted(tmp_path):
    app = make_app(tmp_path, None)
    platforms = App.get_driver_class(app)
    driver = app.get_driver_class()
    assert issubclass(driver, platforms) and driver is not platforms


def test_a_hold_ends_by_itself_and_on_release():
    urgency.hold(10.0)
    try:
        assert 0 < urgency.held() <= urgency.HOLD_MAX  # capped: a lost release costs at most that
    finally:
        urgency.release()
    assert urgency.held() == 0.0


@asynccontextmanager
async def composing(tmp_path):
    """The app running with its composer focused: (app, pilot, composer)."""
    app = make_app(tmp_path, None)
    async with app.run_test() as pilot:
        composer = app.query_one(Composer)
        composer.focus()
        await pilot.pause()
        yield app, pilot, composer


async def test_a_typed_keys_frame_is_drawn_once_the_screen_is_idle_not_at_the_update_timers_tick(tmp_path, monkeypatch):
    async with composing(tmp_path) as (app, pilot, composer):
        assert isinstance(app.screen, KeyFirstScreen)
        monkeypatch.setattr(app.screen._update_timer, "resume", lambda: None)  # its tick never comes
        shown: list[str] = []
        display = app._display
        monkeypatch.setattr(app, "_display", lambda screen, update: (shown.append(composer.text), display(screen, update)))
        await pilot.press("x")
        # Waits on the event loop alone: Pilot.pause draws by itself (it calls the timer's method).
        await wait_until(None, lambda: "x" in shown, what="a frame with the key drawn without the timer")
        await wait_until(None, lambda: not app.echo_pending, what="the key counted as on screen")


async def test_a_key_counts_as_on_screen_only_once_the_widget_it_went_to_has_taken_it(tmp_path, monkeypatch):
    # The composer is busy (its queue held by the test) when a key comes: the key's frame cannot
    # show it yet, so the app must not count it as on screen (it did, via the app's own queue).
    async with composing(tmp_path) as (app, pilot, composer):
        seen: list[str] = []
        echoed = TypedKeys.echoed
        monkeypatch.setattr(TypedKeys, "echoed", lambda self, arrived: (seen.append(composer.text), echoed(self, arrived)))
        scheduled: list[object] = []
        after_refresh = MessagePump.call_after_refresh

        def call_after_refresh(pump, callback, *args, **kwargs):
            if getattr(callback, "__func__", None) is TypedKeys.echoed:
                scheduled.append(pump)
            return after_refresh(pump, callback, *args, **kwargs)

        monkeypatch.setattr(MessagePump, "call_after_refresh", call_after_refresh)
        gate = asyncio.Event()
        composer.call_later(gate.wait)  # the composer's queue waits for the gate
        try:
            app.post_message(events.Key("a", "a"))
            await wait_until(None, lambda: scheduled, what="the app handled the key")
            marks: list[int] = []
            app.call_after_refresh(marks.append, 1)  # after the key, by the app's own way
            await wait_until(None, lambda: marks, what="a refresh after the key")
            assert seen == []  # the composer has not taken the key: not on screen
        finally:
            gate.set()
        await wait_until(None, lambda: seen, what="the key's frame once the composer took it")
        assert seen == ["a"]


class GatedTerminal:
    """A terminal file whose writes wait for ``gate``: the writer thread stuck mid-frame."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.written: list[str] = []

    def write(self, text: str) -> int:
        self.gate.wait(60)
        self.written.append(text)
        return len(text)

    def flush(self) -> None:
        pass


@pytest.fixture
def terminal(monkeypatch):
    """(app, driver, terminal): Textual's Linux driver as the app runs it, its writer thread
    started as ``start_application_mode`` starts it, writing to a ``GatedTerminal``."""
    monkeypatch.setattr(urgency, "HOLD_MAX", 3600.0)  # held until released, however slow the machine
    gated = GatedTerminal()
    monkeypatch.setattr(sys, "__stderr__", gated)  # the file LinuxDriver writes to
    app = TypedKeys()  # the app's typed-key bookkeeping, without an app around it

    async def make() -> LinuxDriver:  # a driver notes the running loop (unused by writing)
        return noting_input(LinuxDriver)(app)

    driver = asyncio.run(make())
    driver._writer_thread = WriterThread(driver._file)
    driver._writer_thread.start()
    try:
        yield app, driver, gated
    finally:
        gated.gate.set()
        driver._writer_thread.stop()


def test_a_keys_pause_lasts_until_the_writer_thread_has_written_its_frame(terminal):
    app, driver, gated = terminal
    assert app.frame_out is driver._file
    app.input_arrived()
    driver.write("the frame with the key")
    app.echoed(app.last_input)  # drawn: still queued for the writer thread
    assert urgency.held() > 0
    gated.gate.set()
    until(lambda: urgency.held() == 0, what="the pause ends once the writer flushed the frame")
    assert gated.written == ["the frame with the key"]


def test_a_frame_already_written_ends_the_pause_at_once_and_a_newer_key_keeps_its_own(terminal):
    app, driver, gated = terminal
    gated.gate.set()
    app.input_arrived()
    driver.write("the frame with the key")
    until(lambda: app.frame_out.flushed == app.frame_out.queued, what="the writer flushed the frame")
    app.echoed(app.last_input)
    assert urgency.held() == 0

    gated.gate.clear()
    app.input_arrived()
    driver.write("the frame with the second key")
    app.echoed(app.last_input)
    app.input_arrived()  # a third key, not drawn yet
    gated.gate.set()
    until(lambda: gated.written[-1:] == ["the frame with the second key"], what="the second frame written")
    until(lambda: app.frame_out.flushed == app.frame_out.queued, what="and flushed")
    assert urgency.held() > 0  # the third key's pause goes on
