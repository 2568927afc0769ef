"""Typed keys first: when the person last typed, noted as soon as the terminal's input is read.

A streaming answer's pump (``widgets/assistant_message.py``) lets a key's frame go out before it
changes widgets, and background threads pause while a key waits for its frame (``urgency``).
Both need to know of the key early: Textual's input thread reads and parses it, then hands it to
the event loop, where it can wait behind everything already queued there (20-50 ms during a
fast stream, measured with benchmarks/latency.py's set-up). So the driver's input thread notes
the time itself (``noting_input``), and the app's ``on_event`` notes it again for keys that never
pass a driver (``Pilot.press`` in tests), both in the app's ``TypedKeys``. The frame that shows a key is drawn as soon as the screen has
taken in its changes (``KeyFirstScreen``), not at the screen's next update tick. Where the
driver writes through a writer thread (a real terminal), the pause lasts until that thread has
written the key's frame out (``FlushNotice``): released when the frame was only drawn, the
network thread and the event loop's next round left the writer waiting for Python (5-30 ms
measured between the frame's queuing and its write, in benchmarks/latency.py's burst).
"""

from __future__ import annotations

import threading
import time
from typing import IO, TYPE_CHECKING, Any, Callable

from textual import events
from textual.screen import Screen

from scout_tui import compat
from scout_tui.tui import line_mode
from scout_tui.core import urgency

if TYPE_CHECKING:
    from textual.driver import Driver
    from textual.message import Message


def typed(message: Message) -> bool:
    """A printable key or a paste: what the person sees echoed in the composer."""
    return isinstance(message, events.Paste) or (isinstance(message, events.Key) and message.is_printable)


class TypedKeys:
    """When the person last typed (noted on the driver's input thread and on the event loop) and
    when its frame went out. The app holds one (``ScoutApp.typed_keys``); its ``on_event`` and
    the driver (``noting_input``) call it."""

    def __init__(self) -> None:
        self.last_input: float | None = None
        """When the person last typed a character or pasted (``time.monotonic()``); None: not yet."""
        self.last_echoed = 0.0
        """``last_input`` as it was when the latest key handled had its frame drawn."""
        self.frame_out: FlushNotice | None = None
        """What the driver's writer thread has written, where the driver writes through one."""

    @property
    def echo_pending(self) -> bool:
        """A typed key is not on screen yet (read, or handled, but its frame not drawn)."""
        return self.last_input is not None and self.last_input > self.last_echoed

    def input_arrived(self) -> None:
        """A key was typed (called on the input thread, or on the event loop): note when, and
        pause background threads until its frame is out (``echoed`` ends the pause)."""
        self.last_input = time.monotonic()
        urgency.hold()

    def echoed(self, arrived: float) -> None:
        """The frame showing the key that arrived at ``arrived`` was drawn: end the pause once
        it is written out (at once, without a writer thread)."""
        self.last_echoed = max(self.last_echoed, arrived)
        if not self.echo_pending:
            if self.frame_out is None:
                urgency.release()
            else:
                self.frame_out.when_written(self._written)

    def _written(self) -> None:
        """Everything drawn up to a key's frame is written (on the writer thread, or here)."""
        if not self.echo_pending:  # a newer key keeps its own pause
            urgency.release()


class KeyFirstScreen(Screen):
    """A screen that draws a typed key's frame as soon as it is idle (its queue empty).

    Textual's screen draws on an update timer (``TEXTUAL_FPS``): when idle with changes, it
    resumes the timer, whose next tick draws. After a long frame the tick is one to two periods
    away (``Timer._run`` skips to the next whole period after the present one), so a key typed
    while a fast answer streams waited up to 33 ms at 60 frames/s for that alone. While a key is
    pending (``App.echo_pending``) this screen draws on idle, as that tick would (layout, changed
    widgets, one write); the timer's own tick then finds nothing to do.

    This replaced drawing at 120 frames/s (``TEXTUAL_FPS``, set by the CLI), which only shortened
    that wait: with this screen, 120 against Textual's 60 measured no clear difference
    (benchmarks/latency.py's burst, 12 runs each, interleaved: key echo p95 61.5 ms against 59.2).
    """

    def on_idle(self, event: events.Idle) -> None:
        # Runs before Screen._on_idle (Textual dispatches a subclass's handler first), which then
        # finds nothing changed and runs the call_after_refresh callbacks.
        if getattr(self.app, "echo_pending", False):
            compat.draw_now(self)  # Textual's draw: no-op unless something changed, or batched


class FlushNotice:
    """The terminal's file as a driver's writer thread writes to it (Textual's ``WriterThread``
    writes what the event loop queued, and flushes once its queue is empty), counting what was
    queued and what is flushed, to call back once everything queued so far is out.

    Args:
        file: the terminal's file (``compat.driver_output``); every other attribute is its.
    """

    def __init__(self, file: IO[str]) -> None:
        self._file = file
        self.queued = 0  # writes queued for the writer thread (counted on the event loop)
        self._written = 0  # writes it made (counted on the writer thread)
        self.flushed = 0  # writes it had made at its latest flush
        self._waiting: list[tuple[int, Callable[[], None]]] = []  # (queued count, callback)
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        self._written += 1
        return self._file.write(text)

    def flush(self) -> None:
        self._file.flush()
        with self._lock:
            self.flushed = self._written
            due = [callback for count, callback in self._waiting if count <= self.flushed]
            self._waiting = [(count, callback) for count, callback in self._waiting if count > self.flushed]
        for callback in due:
            callback()

    def when_written(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once every write queued so far is flushed: now, if it is, else on
        the writer thread at the flush that does it."""
        with self._lock:
            if self.flushed < self.queued:
                self._waiting.append((self.queued, callback))
                return
        callback()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


def noting_input(base: type[Driver]) -> type[Driver]:
    """A subclass of the driver class ``base`` whose ``process_message`` (run on its input thread
    for each event it parsed) calls the app's ``input_arrived`` for typed keys first; where
    ``base`` writes through a file (a writer thread's), it writes through a ``FlushNotice``,
    kept as the app's ``frame_out`` (the app: anything with those two, such as ``TypedKeys``); it restores the terminal's mode from before the CLI left
    line mode (``line_mode.saved_mode``), where it did."""

    class NotingInput(base):  # type: ignore[valid-type,misc]  # the driver class is known at run time only
        def __init__(self, app: Any, *args: Any, **kwargs: Any) -> None:
            super().__init__(app, *args, **kwargs)
            self._notice: FlushNotice | None = None
            if (file := compat.driver_output(self)) is not None:  # Textual's Linux driver: its writer thread's file
                self._notice = app.frame_out = FlushNotice(file)
                compat.set_driver_output(self, self._notice)

        def start_application_mode(self) -> None:
            super().start_application_mode()
            # The CLI left line mode before the app ran (``line_mode``): what Textual found
            # then is not the person's mode, which it must restore at exit and in ``App.suspend``.
            if (mode := line_mode.saved_mode()) is not None:
                compat.restore_mode_at_exit(self, mode)

        def write(self, data: str) -> None:
            if self._notice is not None:
                self._notice.queued += 1
            super().write(data)

        def process_message(self, message: Message) -> None:
            if typed(message):
                compat.driver_app(self).input_arrived()
            super().process_message(message)

    NotingInput.__qualname__ = NotingInput.__name__ = f"NotingInput{base.__name__}"
    return NotingInput
