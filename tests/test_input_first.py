"""Typed keys first (issue 13): the input thread notes a typed key before the event loop gets to
it (``input_first.py``), and background threads pause while the key waits for its frame
(``urgency.py``; the network thread's pause is tested in test_offloop.py)."""

from __future__ import annotations

from textual import events
from textual.app import App

from scout_tui import urgency
from scout_tui.input_first import noting_input
from tests.app_helpers import make_app


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
